#include "atl/supervisor/vitals_trend.hpp"

namespace atl::supervisor {

bool VitalsTrend::due(std::int32_t attempt, TimePoint now) const {
  return attempt != attempt_ || !last_ || now - *last_ >= options_.every;
}

void VitalsTrend::record(std::int32_t attempt, const std::map<std::int32_t, RankFigures>& figures,
                         TimePoint now, const std::map<std::int32_t, Millis>& progress_ages) {
  if (attempt != attempt_) {
    attempt_ = attempt;
    points_.clear();
  }
  last_ = now;
  for (const auto& [rank, f] : figures) {
    if (rank < 0 || rank >= options_.ranks) continue;
    auto& line = points_[rank];
    auto age = progress_ages.find(rank);
    line.push_back({now, f.lines_per_s, f.cpu_percent, f.rss_bytes, f.output_age.count(),
                    age == progress_ages.end() ? -1 : age->second.count()});
    while (line.size() > options_.points) line.pop_front();
  }
}

const std::deque<VitalsTrend::Point>* VitalsTrend::of(std::int32_t rank) const {
  auto it = points_.find(rank);
  return it == points_.end() ? nullptr : &it->second;
}

}  // namespace atl::supervisor
