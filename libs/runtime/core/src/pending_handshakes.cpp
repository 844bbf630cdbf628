#include "atl/core/pending_handshakes.hpp"

namespace atl {

PendingHandshakes::PendingHandshakes(std::size_t cap, std::chrono::milliseconds deadline)
    : cap_(cap), deadline_(deadline) {}

PendingHandshakes::Admission PendingHandshakes::admit(Key key, Clock::time_point now) {
  Admission a;
  if (started_.count(key)) return a;
  a.first_step = true;
  if (due_.size() >= cap_ && !due_.empty()) {
    a.evicted = due_.begin()->second;
    due_.erase(due_.begin());
  }
  if (cap_ == 0) {
    a.evicted = key;  // nothing may wait: this one goes at once
    started_.emplace(key, now);
    return a;
  }
  started_.emplace(key, now);
  due_.emplace(now + deadline_, key);
  return a;
}

bool PendingHandshakes::finish(Key key) {
  auto it = started_.find(key);
  if (it == started_.end()) return false;
  auto [first, last] = due_.equal_range(it->second + deadline_);
  for (auto d = first; d != last; ++d) {
    if (d->second == key) {
      due_.erase(d);
      break;
    }
  }
  started_.erase(it);
  return true;
}

std::vector<PendingHandshakes::Key> PendingHandshakes::take_expired(Clock::time_point now) {
  std::vector<Key> expired;
  while (!due_.empty() && due_.begin()->first <= now) {
    expired.push_back(due_.begin()->second);
    due_.erase(due_.begin());
  }
  return expired;
}

std::optional<PendingHandshakes::Clock::time_point> PendingHandshakes::next_deadline() const {
  if (due_.empty()) return std::nullopt;
  return due_.begin()->first;
}

}  // namespace atl
