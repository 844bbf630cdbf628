// HangWatch in fake time: silence makes a job suspect, only evidence makes it
// hung (stuck ranks, every rank idle, stacks that stand apart), a job that
// computes in silence is harmless and said so once per timeout, progress
// ends a suspect period, and the watch is off at 0, before start and after stop.
#include "atl/supervisor/hang_watch.hpp"

#include <gtest/gtest.h>

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using Kind = HangWatch::Verdict::Kind;
using TimePoint = HangWatch::TimePoint;

const TimePoint t0 = TimePoint{} + 1h;

// Four ranks sampled every second; each call to `tick` moves time on.
struct Job {
  HangWatch watch{10s};
  TimePoint now = t0;
  std::map<std::int32_t, RankProgress> p;

  Job() {
    watch.start({0, 1, 2, 3}, now);
    for (int r = 0; r < 4; ++r) p[r] = RankProgress{};
  }
  // One second: every rank sampled as `p` says, then the watch checked.
  std::optional<HangWatch::Verdict> tick() {
    now += 1s;
    for (auto& [rank, progress] : p) watch.observe(rank, progress, now);
    return watch.check(now);
  }
  // Every rank computes (CPU time grows) but writes nothing.
  void compute() {
    for (auto& [rank, progress] : p) progress.cpu_ticks += 100;
  }
  // `seconds` ticks; the verdicts that came, in order.
  std::vector<HangWatch::Verdict> run(int seconds, bool computing) {
    std::vector<HangWatch::Verdict> out;
    for (int i = 0; i < seconds; ++i) {
      if (computing) compute();
      if (auto v = tick()) out.push_back(*v);
    }
    return out;
  }
};

TEST(HangWatch, RanksThatPrintOrSignalAreNeverSuspect) {
  Job job;
  for (int i = 0; i < 60; ++i) {
    job.p[i % 4].output_lines += 1;  // one rank at a time, every 4 s each
    job.compute();
    EXPECT_FALSE(job.tick()) << i;
  }
  // An explicit signal alone is progress too.
  for (int i = 0; i < 60; ++i) {
    job.p[0].steps += 1;
    EXPECT_FALSE(job.tick()) << i;
  }
}

TEST(HangWatch, SilenceForTheTimeoutIsSuspectNotHung) {
  Job job;
  auto v = job.run(9, true);
  EXPECT_TRUE(v.empty());
  v = job.run(1, true);  // 10 s without a line
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::suspect);
  EXPECT_EQ(v[0].reason, "no rank made progress for 10 s");
  EXPECT_TRUE(job.watch.suspect());
}

TEST(HangWatch, ComputingInSilenceIsHarmlessSaidOncePerTimeoutNeverHung) {
  Job job;
  job.run(10, true);
  auto harmless = job.watch.diagnosed({}, "", job.now);  // one group: every rank alike
  ASSERT_TRUE(harmless);
  EXPECT_EQ(harmless->kind, Kind::harmless);
  EXPECT_FALSE(job.watch.diagnosed({}, "", job.now));  // said once
  // 3x the timeout of silence: suspect again each timeout, never hung.
  for (int period = 0; period < 3; ++period) {
    auto v = job.run(10, true);
    ASSERT_EQ(v.size(), 1u) << period;
    EXPECT_EQ(v[0].kind, Kind::suspect);
    auto again = job.watch.diagnosed({}, "", job.now);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->kind, Kind::harmless);
  }
}

TEST(HangWatch, ASlowJobJustInsideTheTimeoutIsNeverSuspect) {
  Job job;
  for (int step = 0; step < 20; ++step) {
    auto v = job.run(8, true);  // a step every 0.8x the timeout
    EXPECT_TRUE(v.empty()) << step;
    job.p[0].output_lines += 1;
  }
}

TEST(HangWatch, AStoppedRankWhilePeersWaitIsHungNamingIt) {
  Job job;
  job.p[2].state = 'T';  // SIGSTOP: its CPU time stops too
  for (int i = 0; i < 10; ++i) {
    for (int r : {0, 1, 3}) job.p[r].cpu_ticks += 100;  // peers spin in the collective
    if (auto v = job.tick()) {
      ASSERT_EQ(i, 9) << "nothing before the timeout";
      EXPECT_EQ(v->kind, Kind::hung);
      EXPECT_EQ(v->culprits, std::vector<std::int32_t>{2});
      EXPECT_EQ(v->reason, "rank 2 stopped (T) while the other 3 ranks made no progress for 10 s");
    }
  }
  // Once per period: the stacks' verdict and the next checks add nothing.
  EXPECT_FALSE(job.watch.diagnosed({1}, "rank 1 elsewhere", job.now));
  for (int i = 0; i < 5; ++i) {
    for (int r : {0, 1, 3}) job.p[r].cpu_ticks += 100;
    EXPECT_FALSE(job.tick());
  }
}

TEST(HangWatch, AMomentaryUninterruptibleSleepIsNoEvidence) {
  Job job;
  job.run(9, true);
  job.p[1].state = 'D';  // a disk read just now
  auto v = job.run(1, true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::suspect);  // not hung: D for 1 s of a 10 s timeout
  // Held for half the timeout, it is.
  v = job.run(4, true);
  EXPECT_TRUE(v.empty());
  v = job.run(1, true);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::hung);
  EXPECT_EQ(v[0].culprits, std::vector<std::int32_t>{1});
  EXPECT_NE(v[0].reason.find("rank 1 in uninterruptible sleep (D)"), std::string::npos);
}

TEST(HangWatch, EveryRankIdleIsHungWithoutACulpritOnceTheStacksNameNoOne) {
  {
    Job job;
    auto v = job.run(10, false);  // nobody gains CPU time: suspect, stacks first
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].kind, Kind::suspect);
    auto idle = job.watch.diagnosed({}, "", job.now);  // no stack sets anyone apart
    ASSERT_TRUE(idle);
    EXPECT_EQ(idle->kind, Kind::hung);
    EXPECT_TRUE(idle->culprits.empty());
    EXPECT_EQ(idle->reason, "every rank idle (no CPU time, no output) for 10 s");
  }
  {
    Job job;
    for (auto& [r, p] : job.p) p.state = 'T';  // the whole job SIGSTOPped: no one to blame
    auto v = job.run(10, false);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].kind, Kind::suspect);
    auto idle = job.watch.diagnosed({}, "", job.now);
    ASSERT_TRUE(idle);
    EXPECT_EQ(idle->kind, Kind::hung);
    EXPECT_TRUE(idle->culprits.empty());
  }
}

TEST(HangWatch, RanksNeverSampledAreNoEvidenceOfIdleness) {
  HangWatch watch{10s};
  watch.start({0, 1}, t0);  // simulated ranks: no samples ever come
  auto v = watch.check(t0 + 10s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::suspect);
  auto d = watch.diagnosed({}, "", t0 + 10s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Kind::harmless);  // not "every rank idle"
}

TEST(HangWatch, ARankAsleepInItsStepWhilePeersWaitIsNamedByItsStackNotMissedAsIdle) {
  Job job;
  auto v = job.run(10, false);  // every rank idle: the sleeper and the waiters alike
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::suspect);
  auto named = job.watch.diagnosed({2},
                                   "rank 2 in train_step (ddp.py) while 3 ranks are in "
                                   "backward (torch/autograd/__init__.py)",
                                   job.now);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->kind, Kind::hung);
  EXPECT_EQ(named->culprits, std::vector<std::int32_t>{2});
}

TEST(HangWatch, StacksThatStandApartMakeItHung) {
  Job job;
  job.run(10, true);  // rank 3 spins outside the collective: CPU everywhere
  auto v = job.watch.diagnosed(
      {3, 3, 99}, "rank 3 in spin (train.py) while 3 ranks wait in allreduce", job.now);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::hung);
  EXPECT_EQ(v->culprits, std::vector<std::int32_t>{3});  // unknown ranks and repeats dropped
  EXPECT_EQ(v->reason, "rank 3 in spin (train.py) while 3 ranks wait in allreduce");
  // Every rank apart is no outlier: harmless.
  Job all;
  all.run(10, true);
  auto none = all.watch.diagnosed({0, 1, 2, 3}, "all differ", all.now);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->kind, Kind::harmless);
}

TEST(HangWatch, ProgressEndsASuspectPeriodAndALateDiagnosisFindsNothing) {
  Job job;
  job.run(10, true);
  ASSERT_TRUE(job.watch.suspect());
  job.p[0].output_lines += 5;
  auto v = job.tick();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::recovered);
  EXPECT_FALSE(job.watch.suspect());
  EXPECT_FALSE(job.watch.diagnosed({1}, "late", job.now));
  EXPECT_FALSE(job.tick());
}

TEST(HangWatch, AnswersTheAgeOfEachRanksProgress) {
  Job job;
  job.p[1].output_lines = 3;
  job.tick();
  job.run(4, true);
  EXPECT_EQ(job.watch.progress_age(1, job.now), 4000ms);
  EXPECT_EQ(job.watch.progress_age(0, job.now), 5000ms);  // since the start
  EXPECT_FALSE(job.watch.progress_age(7, job.now));
}

TEST(HangWatch, ACounterThatWentBackIsAReplacedProcessAndCountsAsActivity) {
  Job job;
  job.p[0].output_lines = 100;
  job.tick();
  job.run(8, true);
  job.p[0].output_lines = 2;  // the rank's process was replaced
  EXPECT_FALSE(job.tick());
  EXPECT_EQ(job.watch.progress_age(0, job.now), 0ms);
}

TEST(HangWatch, IsOffAtZeroBeforeStartAndAfterStop) {
  HangWatch off{0s};
  off.start({0, 1}, t0);
  EXPECT_FALSE(off.watching());
  EXPECT_FALSE(off.check(t0 + 1h));

  HangWatch unstarted{10s};
  EXPECT_FALSE(unstarted.check(t0 + 1h));

  Job job;
  job.watch.stop();  // atlctl stop: debug states are not watched
  EXPECT_TRUE(job.run(30, false).empty());
  job.watch.start({0, 1, 2, 3}, job.now);  // recover: a new attempt, a fresh start
  EXPECT_TRUE(job.run(9, false).empty());
  EXPECT_EQ(job.run(1, false).size(), 1u);
}

TEST(HangWatch, ANewAttemptForgetsTheOldRanks) {
  Job job;
  job.run(10, false);
  job.watch.start({0, 1}, job.now);
  EXPECT_FALSE(job.watch.suspect());
  job.watch.observe(3, RankProgress{5, 0, 0, 'S'}, job.now);  // not a rank now: ignored
  EXPECT_FALSE(job.watch.progress_age(3, job.now));
}

}  // namespace
}  // namespace atl::supervisor
