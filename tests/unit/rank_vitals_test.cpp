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

// The trend's figures: the same numbers, for the ranks below a bound only.
TEST(RankVitals, OwnFiguresAreTheRanksBelowABoundWithTheSameNumbers) {
  RankVitals v;
  feed(
      v, 4, 30, [](int r, int) { return r + 1; }, [](int r) { return 10 * (r + 1); });
  auto all = v.figures(t0 + 30s);
  auto own = v.own_figures(t0 + 30s, 2);
  ASSERT_EQ(own.size(), 2u);
  for (int r : {0, 1}) {
    EXPECT_DOUBLE_EQ(own[r].lines_per_s, all[r].lines_per_s);
    EXPECT_DOUBLE_EQ(own[r].cpu_percent, all[r].cpu_percent);
    EXPECT_EQ(own[r].rss_bytes, all[r].rss_bytes);
    EXPECT_EQ(own[r].output_age, all[r].output_age);
  }
  EXPECT_TRUE(v.own_figures(t0 + 30s, 0).empty());
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

TEST(RankVitals, AStoppedOrUninterruptibleRankIsMarkedAtOnceEvenInAQuietJob) {
  // Four quiet ranks (no line for a minute, as while a collective waits on
  // one): rank 2 is SIGSTOPped. Its next sample marks it, peers or not.
  RankVitals v;
  feed(
      v, 4, 60, [](int, int) { return 0; }, [](int) { return 0; });
  v.observe(2, {1002, 0, 0, 3000000, 'T'}, t0 + 61s);
  auto f = v.figures(t0 + 61s);
  EXPECT_EQ(f[2].mark, VitalsMark::stopped);
  EXPECT_STREQ(to_string(f[2].mark), "stopped");
  for (int r : {0, 1, 3}) EXPECT_EQ(f[r].mark, VitalsMark::none) << r;
  // In the kernel ('D'): a moment of it (a write) marks nothing; every
  // sample for 5 s does; running again, nothing.
  v.observe(2, {1002, 0, 0, 3000000, 'D'}, t0 + 62s);
  EXPECT_EQ(v.figures(t0 + 62s)[2].mark, VitalsMark::none);
  v.observe(2, {1002, 0, 0, 3000000, 'S'}, t0 + 63s);
  for (int s = 64; s <= 68; ++s)
    v.observe(2, {1002, 0, 0, 3000000, 'D'}, t0 + std::chrono::seconds(s));
  EXPECT_EQ(v.figures(t0 + 68s)[2].mark, VitalsMark::none) << "4 s in D";
  v.observe(2, {1002, 0, 0, 3000000, 'D'}, t0 + 69s);
  EXPECT_EQ(v.figures(t0 + 69s)[2].mark, VitalsMark::uninterruptible) << "5 s in D";
  v.observe(2, {1002, 0, 0, 3000000, 'S'}, t0 + 70s);
  EXPECT_EQ(v.figures(t0 + 70s)[2].mark, VitalsMark::none);
  // A lone rank has no peers to stand apart from, but can be stopped.
  RankVitals lone;
  lone.observe(0, {1000, 5, 0, 1, 'T'}, t0);
  EXPECT_EQ(lone.figures(t0)[0].mark, VitalsMark::stopped);
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

// Three ranks sampled each second for `seconds`, rank r burning cpu(r, s)
// ticks in second s; stragglers looked for after each round. The news, with
// the second it came.
template <class Cpu>
std::vector<std::pair<int, std::string>> run_for(RankVitals& v, int seconds, Cpu cpu) {
  std::vector<std::pair<int, std::string>> news;
  std::vector<std::int64_t> ticks(3, 0);
  for (int s = 0; s <= seconds; ++s) {
    for (int r = 0; r < 3; ++r) {
      if (s > 0) ticks[r] += cpu(r, s);
      v.observe(r, {1000 + r, 0, ticks[r], 1}, t0 + std::chrono::seconds(s));
    }
    for (auto& [rank, line] : v.update_stragglers(t0 + std::chrono::seconds(s)))
      news.emplace_back(s, line);
  }
  return news;
}

TEST(RankVitals, ARankComputingFarMoreThanItsWaitingPeersForLongIsAStraggler) {
  // Rank 1 five times slower: it computes throughout, the others 20% of
  // the time and wait on it the rest; nobody prints.
  RankVitals v;
  auto news = run_for(v, 60, [](int r, int) { return r == 1 ? 100 : 20; });
  ASSERT_EQ(news.size(), 1u);
  // Apart once its window shows it (2 samples), marked 30 s after that.
  EXPECT_GE(news[0].first, 30);
  EXPECT_LE(news[0].first, 32);
  EXPECT_EQ(news[0].second,
            "rank 1 is a straggler: CPU 100% while its peers' median is 20% (they wait on it), "
            "for 30 s");
  const TP end = t0 + 60s;
  EXPECT_EQ(v.stragglers(end), std::vector<std::int32_t>{1});
  auto f = v.figures(end);
  EXPECT_EQ(f[1].mark, VitalsMark::straggler);
  EXPECT_EQ(to_string(f[1].mark), std::string("straggler"));
  EXPECT_EQ(f[0].mark, VitalsMark::none);
}

TEST(RankVitals, AShortEvaluationOrRanksAlikeMakeNoStraggler) {
  {
    // Rank 0 evaluates alone for 20 s in each minute: apart, not persistently.
    RankVitals v;
    auto news = run_for(v, 180, [](int r, int s) { return r == 0 && s % 60 < 20 ? 100 : 10; });
    EXPECT_TRUE(news.empty()) << news[0].second;
  }
  {
    // Every rank alike, busy or not.
    RankVitals v;
    EXPECT_TRUE(run_for(v, 90, [](int, int) { return 100; }).empty());
    EXPECT_TRUE(run_for(v, 90, [](int, int) { return 0; }).empty());
  }
  {
    // Apart but by little: 30% against 20% (under the gap).
    RankVitals v;
    EXPECT_TRUE(run_for(v, 90, [](int r, int) { return r == 2 ? 40 : 20; }).empty());
  }
}

TEST(RankVitals, AStragglerThatCatchesUpIsNoLongerOneAndIsSaidAgainIfItFallsBack) {
  RankVitals v;
  auto news = run_for(v, 200, [](int r, int s) {
    if (r != 1) return 20;
    return s < 60 || s >= 120 ? 100 : 20;  // slow, then repaired, then slow again
  });
  ASSERT_EQ(news.size(), 2u);
  EXPECT_LT(news[0].first, 60);
  EXPECT_GT(news[1].first, 150);
  EXPECT_EQ(v.stragglers(t0 + 200s), std::vector<std::int32_t>{1});
}

}  // namespace
}  // namespace atl::supervisor
