// The ranks' figures over time: a point per rank every `every`, the last
// `points`, the first `ranks` ranks, afresh for each attempt. Fake time.
#include "atl/supervisor/vitals_trend.hpp"

#include <gtest/gtest.h>

using atl::supervisor::RankFigures;
using atl::supervisor::VitalsTrend;
using namespace std::chrono_literals;

namespace {

RankFigures fig(double lines, double cpu, std::int64_t rss = 0) {
  RankFigures f;
  f.lines_per_s = lines;
  f.cpu_percent = cpu;
  f.rss_bytes = rss;
  f.output_age = std::chrono::milliseconds(static_cast<std::int64_t>(lines * 100));
  return f;
}

}  // namespace

TEST(VitalsTrend, APointPerRankEveryPeriodOldestFirst) {
  VitalsTrend trend;
  const auto t0 = VitalsTrend::TimePoint{} + 100s;
  ASSERT_TRUE(trend.due(1, t0));
  trend.record(1, {{0, fig(5, 50, 100)}, {1, fig(1, 90, 200)}}, t0);
  EXPECT_FALSE(trend.due(1, t0 + 1999ms));
  EXPECT_TRUE(trend.due(1, t0 + 2s));
  trend.record(1, {{0, fig(6, 40, 110)}, {1, fig(0, 99, 210)}}, t0 + 2s);
  const auto* zero = trend.of(0);
  ASSERT_NE(zero, nullptr);
  ASSERT_EQ(zero->size(), 2u);
  EXPECT_EQ(zero->front().at, t0);
  EXPECT_EQ(zero->front().lines_per_s, 5);
  EXPECT_EQ(zero->back().cpu_percent, 40);
  EXPECT_EQ(zero->back().rss_bytes, 110);
  EXPECT_EQ(zero->back().output_age_ms, 600);
  EXPECT_EQ(trend.of(1)->back().cpu_percent, 99);
  EXPECT_EQ(trend.of(2), nullptr);
}

TEST(VitalsTrend, OnlyTheLastPointsAreKept) {
  VitalsTrend trend({1s, 3, 1024});
  auto t = VitalsTrend::TimePoint{};
  for (int i = 0; i < 10; ++i, t += 1s) trend.record(1, {{0, fig(i, i)}}, t);
  const auto* zero = trend.of(0);
  ASSERT_EQ(zero->size(), 3u);
  EXPECT_EQ(zero->front().lines_per_s, 7);
  EXPECT_EQ(zero->back().lines_per_s, 9);
}

TEST(VitalsTrend, RanksPastTheBoundAreNotKept) {
  VitalsTrend trend({1s, 90, 2});
  trend.record(1, {{0, fig(1, 1)}, {1, fig(1, 1)}, {2, fig(1, 1)}, {31999, fig(1, 1)}},
               VitalsTrend::TimePoint{});
  EXPECT_EQ(trend.ranks_kept(), 2u);
  EXPECT_EQ(trend.of(2), nullptr);
}

TEST(VitalsTrend, ANewAttemptStartsAfreshAndIsDueAtOnce) {
  VitalsTrend trend;
  const auto t0 = VitalsTrend::TimePoint{};
  trend.record(1, {{0, fig(1, 1)}, {1, fig(1, 1)}}, t0);
  EXPECT_TRUE(trend.due(2, t0 + 1ms));
  trend.record(2, {{1, fig(3, 3)}}, t0 + 1ms);
  EXPECT_EQ(trend.attempt(), 2);
  EXPECT_EQ(trend.of(0), nullptr);
  ASSERT_EQ(trend.of(1)->size(), 1u);
  EXPECT_EQ(trend.of(1)->front().lines_per_s, 3);
}

// The hang watch's progress age rides along where it gave one (-1: no
// watch for that rank, as when the job is not watched at all).
TEST(VitalsTrend, ProgressAgesRideAlongWhereTheWatchGaveThem) {
  VitalsTrend trend;
  const auto t0 = VitalsTrend::TimePoint{} + 10s;
  trend.record(1, {{0, fig(1, 1)}, {1, fig(1, 1)}}, t0, {{0, 4500ms}});
  trend.record(1, {{0, fig(1, 1)}, {1, fig(1, 1)}}, t0 + 2s, {{0, 6500ms}, {1, 100ms}});
  trend.record(1, {{0, fig(1, 1)}}, t0 + 4s);
  const auto& zero = *trend.of(0);
  EXPECT_EQ(zero[0].progress_age_ms, 4500);
  EXPECT_EQ(zero[1].progress_age_ms, 6500);
  EXPECT_EQ(zero[2].progress_age_ms, -1);
  EXPECT_EQ(trend.of(1)->front().progress_age_ms, -1);
  EXPECT_EQ(trend.of(1)->back().progress_age_ms, 100);
}
