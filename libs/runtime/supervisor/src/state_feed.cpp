#include "atl/supervisor/state_feed.hpp"

#include <algorithm>

namespace atl::supervisor {

StateFeed::StateFeed(std::string state) { changes_.push_back({newest_, std::move(state)}); }

std::string StateFeed::text_after(std::uint64_t seen) const {
  std::string text = std::to_string(newest_);
  const std::uint64_t oldest = changes_.front().number;
  if (seen + 1 < oldest) text += " missed " + std::to_string(oldest - seen - 1);
  for (const Change& c : changes_)
    if (c.number > seen) text += " " + c.state;
  return text;
}

void StateFeed::changed(std::string state, FeedEffects& out) {
  changes_.push_back({++newest_, std::move(state)});
  if (changes_.size() > kKept) changes_.pop_front();
  for (auto& [id, reply] : waiters_.take_all_with_keys())
    out.push_back(Answer{reply, ReplyCode::ok, text_after(id)});
}

std::optional<Answer> StateFeed::answer_now(std::uint64_t seen, std::int64_t timeout_ms) const {
  // A new watch (kubectl get -w) begins with the state now; so does one
  // whose `seen` is past the newest: another head's count (this one started
  // again).
  if (seen == 0 || seen > newest_)
    return Answer{0, ReplyCode::ok, std::to_string(newest_) + " " + changes_.back().state};
  if (seen < newest_ || timeout_ms <= 0) return Answer{0, ReplyCode::ok, text_after(seen)};
  return std::nullopt;
}

void StateFeed::await(std::uint64_t seen, ReplyId reply, Millis timeout, FeedEffects& out) {
  const WaiterId waiter = waiters_.add(seen, reply);
  out.push_back(ArmWaitTimer{waiter, std::min(timeout, kMaxWait)});
}

void StateFeed::on_wait_timer(WaiterId waiter, FeedEffects& out) {
  if (auto expired = waiters_.expire(waiter))
    out.push_back(Answer{expired->second, ReplyCode::ok, text_after(expired->first)});
}

void StateFeed::abandon(FeedEffects& out) {
  for (auto& [seen, reply] : waiters_.take_all_with_keys())
    out.push_back(Answer{reply, ReplyCode::ok, text_after(seen)});
}

}  // namespace atl::supervisor
