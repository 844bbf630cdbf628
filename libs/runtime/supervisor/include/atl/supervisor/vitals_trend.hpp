// VitalsTrend: each rank's recent figures over time (lines/s, CPU%, memory,
// time since its last line, time since its last progress as the hang watch
// counts it), for the dashboard's sparklines beside the
// figures of the moment: "was it always this slow, or since when?". A point
// per rank at most every `every`, the last `points` of them, for the first
// `ranks` ranks (the ranks page shows them a page at a time; a 32,000-rank
// job keeps 1,024 x 90 points, ~3.7 MB); a new attempt starts afresh. Fed
// RankVitals' figures (no reads of its own); plain C++, fake-time tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>

#include "atl/core/duration.hpp"
#include "atl/supervisor/rank_vitals.hpp"

namespace atl::supervisor {

class VitalsTrend {
 public:
  using TimePoint = RankVitals::TimePoint;

  struct Options {
    Millis every = std::chrono::seconds(2);
    std::size_t points = 90;  // 3 minutes at the default pace
    std::int32_t ranks = 1024;
  };
  struct Point {
    TimePoint at{};
    double lines_per_s = 0;
    double cpu_percent = 0;
    std::int64_t rss_bytes = 0;
    std::int64_t output_age_ms = 0;
    // Since its last progress (lines or signals) as the hang watch counts
    // it; -1 while no watch runs (not spmd user code, --hang-timeout 0).
    std::int64_t progress_age_ms = -1;
  };

  VitalsTrend() = default;
  explicit VitalsTrend(Options options) : options_(options) {}

  // Whether a point is due (the caller then computes the figures).
  bool due(std::int32_t attempt, TimePoint now) const;
  // This round's figures of `attempt`'s ranks: a point each (ranks below
  // `ranks` only), with their progress ages where the watch gave one; an
  // earlier attempt's points are dropped first.
  void record(std::int32_t attempt, const std::map<std::int32_t, RankFigures>& figures,
              TimePoint now, const std::map<std::int32_t, Millis>& progress_ages = {});

  std::int32_t attempt() const { return attempt_; }
  std::int32_t rank_bound() const { return options_.ranks; }  // ranks below it are kept
  // `rank`'s points, oldest first (null: none).
  const std::deque<Point>* of(std::int32_t rank) const;
  std::size_t ranks_kept() const { return points_.size(); }

 private:
  Options options_;
  std::int32_t attempt_ = 0;
  std::optional<TimePoint> last_;
  std::map<std::int32_t, std::deque<Point>> points_;
};

}  // namespace atl::supervisor
