#include "atl/core/source_budget.hpp"

#include <algorithm>

namespace atl {

SourceBudget::SourceBudget(Options options) : options_(options) {}

void SourceBudget::refill(Bucket& b, Clock::time_point now) const {
  if (now <= b.at) return;
  const double seconds = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(options_.burst, b.tokens + seconds * options_.per_second);
  b.at = now;
}

void SourceBudget::forget_idle(Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    refill(it->second, now);
    if (it->second.tokens >= options_.burst && it->second.refused == 0) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
}

bool SourceBudget::admit(const std::string& source, Clock::time_point now) {
  auto it = buckets_.find(source);
  if (it == buckets_.end()) {
    if (buckets_.size() >= options_.max_sources) forget_idle(now);
    if (buckets_.size() >= options_.max_sources) return true;  // untracked, never refused for it
    it = buckets_.emplace(source, Bucket{options_.burst, now, 0}).first;
  }
  Bucket& b = it->second;
  refill(b, now);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  ++b.refused;
  return false;
}

std::vector<SourceBudget::Refusals> SourceBudget::take_refusals() {
  std::vector<Refusals> out;
  for (auto& [source, bucket] : buckets_) {
    if (bucket.refused == 0) continue;
    out.push_back({source, bucket.refused});
    bucket.refused = 0;
  }
  std::sort(out.begin(), out.end(), [](const Refusals& a, const Refusals& b) {
    return a.count != b.count ? a.count > b.count : a.source < b.source;
  });
  return out;
}

}  // namespace atl
