#include "atl/core/failure_detector.hpp"

#include <algorithm>

namespace atl {

Status validate_heartbeats(const HeartbeatOptions& options) {
  if (options.interval <= Millis(0)) return make_error("heartbeat interval must be positive");
  if (options.timeout < 2 * options.interval) {
    return make_error("heartbeat timeout (" + format_duration(options.timeout) +
                      ") must be at least twice the interval (" +
                      format_duration(options.interval) + ")");
  }
  return Ok{};
}

void FailureDetector::heard(const std::string& peer, TimePoint now) {
  auto it = last_heard_.find(peer);
  if (it != last_heard_.end() && now > it->second) it->second = now;
}

void FailureDetector::excuse(Millis stall, TimePoint now) {
  if (stall <= Millis{0}) return;
  for (auto& [peer, at] : last_heard_) at = std::min(now, at + stall);
}

std::vector<std::string> FailureDetector::expire(TimePoint now) {
  std::vector<std::pair<TimePoint, std::string>> lost;
  for (auto it = last_heard_.begin(); it != last_heard_.end();) {
    if (now - it->second > timeout_) {
      lost.emplace_back(it->second, it->first);
      it = last_heard_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(lost.begin(), lost.end());
  std::vector<std::string> out;
  out.reserve(lost.size());
  for (auto& [when, peer] : lost) out.push_back(std::move(peer));
  return out;
}

std::optional<Millis> FailureDetector::silence(const std::string& peer, TimePoint now) const {
  auto it = last_heard_.find(peer);
  if (it == last_heard_.end()) return std::nullopt;
  return std::chrono::duration_cast<Millis>(now - it->second);
}

std::optional<FailureDetector::TimePoint> FailureDetector::next_deadline() const {
  std::optional<TimePoint> first;
  for (const auto& [peer, when] : last_heard_)
    if (!first || when < *first) first = when;
  if (first) *first += timeout_;
  return first;
}

}  // namespace atl
