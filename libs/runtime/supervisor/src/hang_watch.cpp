#include "atl/supervisor/hang_watch.hpp"

#include <algorithm>

namespace atl::supervisor {

namespace {

std::string seconds(Millis d) {
  const auto ms = d.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
}

std::string rank_list(const std::vector<std::int32_t>& ranks) {
  std::string out;
  for (auto r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace

HangWatch::HangWatch(Millis timeout) : timeout_(timeout) {}

void HangWatch::start(const std::vector<std::int32_t>& ranks, TimePoint now) {
  ranks_.clear();
  for (auto r : ranks) ranks_[r] = Rank{RankProgress{}, now, now, now};
  last_progress_ = now;
  suspect_since_.reset();
  hung_said_ = harmless_said_ = false;
  watching_ = timeout_.count() > 0 && !ranks_.empty();
}

void HangWatch::stop() {
  watching_ = false;
  suspect_since_.reset();
}

void HangWatch::observe(std::int32_t rank, const RankProgress& p, TimePoint now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  Rank& r = it->second;
  // A counter that changed either way is activity: one that went back is a
  // process replaced within the rank, counting from zero again.
  if (p.output_lines != r.last.output_lines || p.steps != r.last.steps) {
    r.progressed = now;
    last_progress_ = std::max(last_progress_, now);
  }
  if (p.cpu_ticks != r.last.cpu_ticks) r.cpu_gained = now;
  if (p.state != r.last.state) r.state_since = now;
  r.last = p;
  r.sampled = true;
}

std::optional<HangWatch::Verdict> HangWatch::stuck(TimePoint now) const {
  // Stuck: stopped or in uninterruptible sleep for half the timeout at least
  // (a D state of a moment is a disk read), while other ranks are not.
  std::vector<std::int32_t> stuck;
  std::string how;
  for (const auto& [rank, r] : ranks_) {
    const char s = r.last.state;
    if ((s == 'T' || s == 'D') && now - r.state_since >= timeout_ / 2) {
      stuck.push_back(rank);
      if (stuck.size() <= 3)
        how += std::string(how.empty() ? "" : ", ") + "rank " + std::to_string(rank) +
               (s == 'T' ? " stopped (T)" : " in uninterruptible sleep (D)");
    }
  }
  if (!stuck.empty() && stuck.size() < ranks_.size()) {
    if (stuck.size() > 3) how += " and " + std::to_string(stuck.size() - 3) + " more";
    return Verdict{Verdict::Kind::hung, stuck,
                   how + " while the other " + std::to_string(ranks_.size() - stuck.size()) +
                       " ranks made no progress for " + seconds(timeout_)};
  }
  return std::nullopt;
}

std::optional<HangWatch::Verdict> HangWatch::all_idle(TimePoint now) const {
  // Every rank sampled, none gaining CPU time: ranks never sampled (fake
  // ranks of a simulated pod, a node that cannot read /proc) prove nothing.
  const bool idle = std::all_of(ranks_.begin(), ranks_.end(), [&](const auto& entry) {
    return entry.second.sampled && now - entry.second.cpu_gained >= timeout_;
  });
  if (!idle) return std::nullopt;
  return Verdict{
      Verdict::Kind::hung, {}, "every rank idle (no CPU time, no output) for " + seconds(timeout_)};
}

std::optional<HangWatch::Verdict> HangWatch::check(TimePoint now) {
  if (!watching_) return std::nullopt;
  const auto silent = std::chrono::duration_cast<Millis>(now - last_progress_);
  if (silent < timeout_) {
    if (!suspect_since_) return std::nullopt;
    suspect_since_.reset();
    return Verdict{Verdict::Kind::recovered, {}, "progress again"};
  }
  const bool new_period = !suspect_since_ || now - *suspect_since_ >= timeout_;
  if (new_period) {
    suspect_since_ = now;
    hung_said_ = harmless_said_ = false;
  }
  if (!hung_said_) {
    if (auto hung = stuck(now)) {
      hung_said_ = true;
      return hung;
    }
  }
  if (!new_period) return std::nullopt;
  return Verdict{Verdict::Kind::suspect, {}, "no rank made progress for " + seconds(silent)};
}

std::optional<HangWatch::Verdict> HangWatch::diagnosed(const std::vector<std::int32_t>& outliers,
                                                       const std::string& why, TimePoint now) {
  if (!watching_ || !suspect_since_ || hung_said_) return std::nullopt;
  std::vector<std::int32_t> known;
  for (auto r : outliers)
    if (ranks_.count(r)) known.push_back(r);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  if (!known.empty() && known.size() < ranks_.size()) {
    hung_said_ = true;
    return Verdict{Verdict::Kind::hung, known,
                   why.empty() ? "ranks " + rank_list(known) + " stand apart from the rest" : why};
  }
  if (auto idle = all_idle(now)) {
    hung_said_ = true;
    return idle;
  }
  if (harmless_said_) return std::nullopt;
  harmless_said_ = true;
  return Verdict{Verdict::Kind::harmless,
                 {},
                 "no rank made progress for " + seconds(timeout_) +
                     ", but every rank computes alike: no action"};
}

std::optional<Millis> HangWatch::progress_age(std::int32_t rank, TimePoint now) const {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return std::nullopt;
  return std::chrono::duration_cast<Millis>(now - it->second.progressed);
}

}  // namespace atl::supervisor
