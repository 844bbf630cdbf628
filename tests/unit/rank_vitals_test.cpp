// Each rank's figures at a glance, in fake time: rates over the window, the
// user's pid and memory as sampled, and the marks (silent while peers talk,
// slow against the peers' median) that never fall on a job quiet as a whole.
#include "atl/supervisor/rank_vitals.hpp"

#include <gtest/gtest.h>

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using TP = RankVitals::TimePoint;

const TP t0 = TP{} + 1000s;

// `ranks` ranks sampled once a second for `seconds`: in second s rank r
// prints rate(r, s) lines and burns cpu(r) ticks (100 ticks: one core-second).
template <class Rate, class Cpu>
void feed(RankVitals& v, int ranks, int seconds, Rate rate, Cpu cpu) {
  std::vector<std::int64_t> lines(ranks, 0);
  for (int s = 0; s <= seconds; ++s)
    for (int r = 0; r < ranks; ++r) {
      if (s > 0) lines[r] += rate(r, s);
      v.observe(r, {1000 + r, lines[r], static_cast<std::int64_t>(cpu(r)) * s, (r + 1) * 1000000},
                t0 + std::chrono::seconds(s));
    }
}

TEST(RankVitals, RatesComeFromTheWindowAndThePidAndMemoryFromTheLastSample) {
  RankVitals v;
  feed(
      v, 2, 30, [](int r, int) { return r == 0 ? 10 : 4; },
      [](int r) { return r == 0 ? 50 : 100; });
  auto f = v.figures(t0 + 30s);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_DOUBLE_EQ(f[0].lines_per_s, 10);
  EXPECT_DOUBLE_EQ(f[1].lines_per_s, 4);
  EXPECT_DOUBLE_EQ(f[0].cpu_percent, 50);
  EXPECT_DOUBLE_EQ(f[1].cpu_percent, 100);
  EXPECT_EQ(f[0].pid, 1000);
  EXPECT_EQ(f[1].rss_bytes, 2000000);
  EXPECT_EQ(f[0].output_age, 0ms);
  EXPECT_EQ(f[1].output_age, 0ms);
  EXPECT_EQ(to_string(f[0].mark), std::string(""));
}

TEST(RankVitals, OneSampleHasNoRateYetAndNoMark) {
  RankVitals v;
  v.observe(0, {7, 5, 10, 1}, t0);
  v.observe(1, {8, 0, 0, 1}, t0);
  auto f = v.figures(t0 + 1s);
  EXPECT_EQ(f[0].lines_per_s, 0);
  EXPECT_EQ(f[0].cpu_percent, 0);
  EXPECT_EQ(f[0].output_age, 1000ms);
  EXPECT_EQ(f[1].mark, VitalsMark::none);
}

TEST(RankVitals, ARankSilentWhilePeersTalkIsMarkedSilent) {
  // Rank 2 stops printing after 5 s (SIGSTOPped, say); its peers go on.
  auto rate = [](int r, int s) { return r == 2 && s > 5 ? 0 : 5; };
  RankVitals v;
  feed(v, 4, 25, rate, [](int) { return 100; });
  auto f = v.figures(t0 + 25s);
  EXPECT_EQ(f[2].mark, VitalsMark::silent);
  EXPECT_EQ(f[2].output_age, 20000ms);
  for (int r : {0, 1, 3}) EXPECT_EQ(f[r].mark, VitalsMark::none) << r;
  // Before silent_after (15 s) it is slow: no line in its window.
  RankVitals early;
  feed(early, 4, 12, rate, [](int) { return 100; });
  EXPECT_EQ(early.figures(t0 + 12s)[2].mark, VitalsMark::slow);
}

TEST(RankVitals, ARankFarSlowerThanThePeersMedianIsMarkedSlow) {
  RankVitals v;
  feed(
      v, 4, 20, [](int r, int) { return r == 3 ? 3 : 10; }, [](int) { return 100; });
  auto f = v.figures(t0 + 20s);
  EXPECT_EQ(f[3].mark, VitalsMark::slow);  // 3 < 10/3
  for (int r : {0, 1, 2}) EXPECT_EQ(f[r].mark, VitalsMark::none) << r;
  // A third of the median or more is within the spread of a healthy job.
  RankVitals w;
  feed(
      w, 4, 20, [](int r, int) { return r == 3 ? 4 : 10; }, [](int) { return 100; });
  EXPECT_EQ(w.figures(t0 + 20s)[3].mark, VitalsMark::none);
}

TEST(RankVitals, AJobQuietAsAWholeMarksNobody) {
  // Every rank silent for a minute (a job that logs rarely): the hang
  // watch judges that, not the marks.
  RankVitals v;
  feed(
      v, 4, 60, [](int, int) { return 0; }, [](int) { return 100; });
  for (const auto& [rank, f] : v.figures(t0 + 60s)) {
    EXPECT_EQ(f.mark, VitalsMark::none) << rank;
    EXPECT_EQ(f.output_age, 60000ms);
  }
  // Slow rates under the floor mark nobody slow either.
  RankVitals w;
  feed(
      w, 3, 20, [](int r, int s) { return r == 0 ? 0 : (s % 5 == 0 ? 1 : 0); },
      [](int) { return 0; });
  for (const auto& [rank, f] : w.figures(t0 + 20s)) EXPECT_NE(f.mark, VitalsMark::slow) << rank;
}

TEST(RankVitals, ALoneRankIsNeverMarkedAndANewAttemptStartsClean) {
  RankVitals v;
  v.reset(1);
  feed(
      v, 1, 30, [](int, int) { return 0; }, [](int) { return 0; });
  EXPECT_EQ(v.figures(t0 + 30s)[0].mark, VitalsMark::none);
  v.reset(2);
  EXPECT_EQ(v.attempt(), 2);
  EXPECT_TRUE(v.figures(t0 + 31s).empty());
}

}  // namespace
}  // namespace atl::supervisor
