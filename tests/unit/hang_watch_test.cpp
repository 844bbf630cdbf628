// HangWatch in fake time: silence makes a job suspect, only evidence makes it
// hung (stuck ranks, every rank idle, stacks that stand apart), a job that
// computes in silence is harmless and said so once per timeout, progress
// ends a suspect period, and the watch is off at 0, before start and after
// stop. Working is not hung: a rank that computes or writes while the others
// wait (rank 0 evaluating, checkpointing) has the configured timeout; an
// all-idle job is suspect after the timeout learned from its own cadence.
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
  // Its CPU time and I/O stand still from here (the others compute).
  auto others = [&](int seconds) {
    std::vector<HangWatch::Verdict> out;
    for (int i = 0; i < seconds; ++i) {
      for (int r : {0, 2, 3}) job.p[r].cpu_ticks += 100;
      if (auto v = job.tick()) out.push_back(*v);
    }
    return out;
  };
  auto v = others(1);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::suspect);  // not hung: D for 1 s of a 10 s timeout
  // Held for half the timeout, it is.
  v = others(4);
  EXPECT_TRUE(v.empty());
  v = others(1);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::hung);
  EXPECT_EQ(v[0].culprits, std::vector<std::int32_t>{1});
  EXPECT_NE(v[0].reason.find("rank 1 in uninterruptible sleep (D) with no I/O"), std::string::npos);
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
    EXPECT_EQ(idle->reason, "every rank idle (no CPU time, no I/O, no output) for 10 s");
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
  // It works, past the configured timeout: busy.
  EXPECT_EQ(v->reason, "rank 3 busy for 10 s in spin (train.py) while 3 ranks wait in allreduce");
  // Named by the flight records, the line begins with the collective: the
  // busy rank is put in front.
  Job records;
  records.run(10, true);
  v = records.watch.diagnosed({3},
                              "ranks 0,1,2 wait in all_reduce #11 on the default group; rank 3 "
                              "never entered it; rank 3 in spin (train.py)",
                              records.now);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason,
            "rank 3 busy for 10 s: ranks 0,1,2 wait in all_reduce #11 on the default group; "
            "rank 3 never entered it; rank 3 in spin (train.py)");
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
  job.watch.observe(3, RankProgress{5, 0, 0, 'S', 0}, job.now);  // not a rank now: ignored
  EXPECT_FALSE(job.watch.progress_age(3, job.now));
}

// A job with the default 5-minute timeout that learns from its cadence.
struct Learning : Job {
  Learning() {
    watch = HangWatch(HangWatch::Options{std::chrono::minutes(5)});
    watch.start({0, 1, 2, 3}, now);
  }
  // `steps` steps of `every` seconds: rank 0 prints one line a step, every
  // rank computes throughout.
  void train(int steps, int every) {
    for (int s = 0; s < steps; ++s) {
      for (int i = 0; i < every; ++i) {
        compute();
        if (i == every - 1) p[0].output_lines += 1;
        EXPECT_FALSE(tick()) << s << " " << i;
      }
    }
  }
  // Loader workers' polls: a tick every few seconds, no real work.
  void poll(int i) {
    for (auto& [rank, progress] : p)
      if (i % 5 == 0) progress.cpu_ticks += 1;
  }
};

// Looking costs the ranks a little: the flight recorder's dump runs in the
// rank (a few ms of CPU, its record's bytes written), py-spy's reads do not.
// That must not make an idle rank "working": not in the verdict (it was
// judged busy, or left alone as working while the others wait), and not by
// ending the suspect period before the looks are done.
TEST(HangWatch, WhatALookCostsARankIsNotWork) {
  Learning job;
  job.train(20, 1);
  std::optional<HangWatch::Verdict> v;
  while (!(v = job.tick())) {
  }
  ASSERT_EQ(v->kind, Kind::suspect);  // every rank idle for the learned timeout
  // Two looks a second apart, each costing every rank a tick of CPU and
  // 60 KiB written (a 256-entry record): between them the period stands.
  for (int look = 0; look < 2; ++look) {
    for (auto& [rank, progress] : job.p) {
      progress.cpu_ticks += 1;
      progress.io_bytes += 60 << 10;
    }
    EXPECT_FALSE(job.tick()) << look;
    EXPECT_TRUE(job.watch.suspect()) << look;
  }
  auto named =
      job.watch.diagnosed({1}, "rank 1 in train_step (ddp.py) while 3 ranks wait", job.now);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->kind, Kind::hung);
  EXPECT_EQ(named->reason, "rank 1 in train_step (ddp.py) while 3 ranks wait");  // not busy

  // Work a look cannot explain still counts: rank 0 begins an evaluation
  // (a core) as the job turns suspect: left alone, as before.
  Learning eval;
  eval.train(20, 1);
  while (!(v = eval.tick())) {
  }
  ASSERT_EQ(v->kind, Kind::suspect);
  for (int i = 0; i < 3; ++i) {
    eval.p[0].cpu_ticks += 100;
    eval.tick();
  }
  auto left =
      eval.watch.diagnosed({0}, "rank 0 in evaluate (train.py) while 3 ranks wait", eval.now);
  EXPECT_TRUE(!left || left->kind != Kind::hung) << left->reason;
}

TEST(HangWatch, RankZeroCheckpointingAloneInUninterruptibleSleepWithBytesMovingIsLeftAlone) {
  // Rank 0 writes a checkpoint: D most of the time, little CPU, bytes
  // moving; the others wait, idle, for 20 x the step time and more.
  Learning job;
  job.train(20, 1);
  job.p[0].state = 'D';
  for (int i = 0; i < 60; ++i) {
    job.p[0].io_bytes += 50 << 20;
    job.p[0].cpu_ticks += 2;
    EXPECT_FALSE(job.tick()) << i;
  }
  EXPECT_TRUE(job.watch.working(0, job.now));
  EXPECT_FALSE(job.watch.working(1, job.now));
}

TEST(HangWatch, BeforeItsFirstStepsAJobHasTheConfiguredTimeout) {
  Learning job;
  for (int i = 0; i < 299; ++i) {  // importing, loading: silent, idle, 5 min
    job.poll(i);
    EXPECT_FALSE(job.tick()) << i;
  }
  EXPECT_FALSE(job.watch.learned());
  EXPECT_EQ(job.watch.idle_timeout(), std::chrono::minutes(5));
  auto v = job.tick();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::suspect);
}

TEST(HangWatch, AnAllIdleJobIsSuspectAfterItsLearnedTimeoutAndNamedByItsStacks) {
  Learning job;
  job.train(20, 1);  // a step a second
  EXPECT_TRUE(job.watch.learned());
  EXPECT_EQ(job.watch.step_p99(), 1000ms);
  EXPECT_EQ(job.watch.idle_timeout(), 10s);  // 4 x 1 s, floored at 10 s
  // Rank 2 sleeps in its step; the others wait in the collective: all idle
  // (their loader workers poll now and then).
  std::optional<HangWatch::Verdict> v;
  int at = 0;
  for (at = 1; at <= 30 && !v; ++at) {
    job.poll(at);
    v = job.tick();
  }
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::suspect);
  EXPECT_EQ(at - 1, 10);  // 10 s of silence
  EXPECT_EQ(v->reason, "no rank made progress for 10 s, every rank idle");
  auto named = job.watch.diagnosed({2},
                                   "rank 2 in train_step (ddp.py) while 3 ranks are in "
                                   "all_reduce (torch/distributed/distributed_c10d.py)",
                                   job.now);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->kind, Kind::hung);
  EXPECT_EQ(named->culprits, std::vector<std::int32_t>{2});
  EXPECT_EQ(named->reason.rfind("rank 2 in train_step", 0), 0u) << named->reason;
  EXPECT_NE(job.watch.evidence({2}, job.now).find("rank 2: S, CPU 0%, I/O 0 B/s, idle for"),
            std::string::npos)
      << job.watch.evidence({2}, job.now);
}

// Every rank asleep after the job made steps (all deadlocked alike, all in
// a collective one of them skipped): the README's "idle ranks with no stack
// apart are hung" holds at the learned timeout. It used to be left alone up
// to the configured one (5 min), which a user read as never.
TEST(HangWatch, AnAllIdleJobWhoseStacksNameNoOneIsHungAtItsLearnedTimeout) {
  Learning job;
  job.train(20, 1);
  std::optional<HangWatch::Verdict> v;
  for (int i = 1; i <= 10; ++i) v = job.tick();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::suspect);
  auto idle = job.watch.diagnosed({}, "", job.now);
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->kind, Kind::hung);
  EXPECT_TRUE(idle->culprits.empty());
  EXPECT_EQ(idle->reason,
            "every rank idle (no CPU time, no I/O, no output) for 10 s, no stack standing apart "
            "(p99 step 1 s)");
  // Said once.
  EXPECT_FALSE(job.watch.diagnosed({}, "", job.now));
}

TEST(HangWatch, TheLearnedTimeoutFollowsTheStepTimeAndNeverExceedsTheConfiguredOne) {
  Learning job;
  job.train(10, 5);  // a step every 5 s
  EXPECT_EQ(job.watch.step_p99(), 5000ms);
  EXPECT_EQ(job.watch.idle_timeout(), 20s);
  for (int i = 1; i < 20; ++i) EXPECT_FALSE(job.tick()) << i;  // idle, within 4 steps
  auto v = job.tick();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::suspect);

  HangWatch shorter(HangWatch::Options{7s});
  shorter.start({0}, t0);
  for (int i = 1; i <= 20; ++i)
    shorter.observe(0, RankProgress{i, 0, i * 100, 'S', 0}, t0 + i * 1s);
  EXPECT_TRUE(shorter.learned());
  EXPECT_EQ(shorter.idle_timeout(), 7s);  // the user's bound is the longest
}

TEST(HangWatch, RankZeroEvaluatingAloneWhileTheOthersWaitIsLeftAloneUpToTheTimeout) {
  Learning job;
  job.train(20, 1);
  // 20 x the step time, and far more: rank 0 computes, the others wait in a barrier.
  for (int i = 1; i < 300; ++i) {
    job.p[0].cpu_ticks += 90;
    job.poll(i);
    EXPECT_FALSE(job.tick()) << i;
  }
  // At the configured timeout it is judged as what it is: busy, the others waiting.
  job.p[0].cpu_ticks += 90;
  auto v = job.tick();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::suspect);
  EXPECT_EQ(v->reason, "no rank made progress for 300 s");
}

TEST(HangWatch, ABusyRankPastTheTimeoutIsNamedAsBusyWithOrWithoutStacks) {
  {
    Learning job;
    job.train(20, 1);
    for (int i = 1; i <= 300; ++i) {
      job.p[0].cpu_ticks += 90;
      job.tick();
    }
    ASSERT_TRUE(job.watch.suspect());
    auto v = job.watch.diagnosed(
        {0}, "rank 0 in evaluate (train.py) while 3 ranks are in barrier (c10d.py)", job.now);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->kind, Kind::hung);
    EXPECT_EQ(v->culprits, std::vector<std::int32_t>{0});
    EXPECT_EQ(v->reason,
              "rank 0 busy for 300 s in evaluate (train.py) while 3 ranks are in barrier "
              "(c10d.py)");
  }
  {
    // No stack to tell (no py-spy, no gdb): the working rank among idle ones.
    Learning job;
    job.train(20, 1);
    for (int i = 1; i <= 300; ++i) {
      job.p[3].cpu_ticks += 90;
      job.tick();
    }
    auto v = job.watch.diagnosed({}, "", job.now);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->kind, Kind::hung);
    EXPECT_EQ(v->culprits, std::vector<std::int32_t>{3});
    EXPECT_EQ(v->reason, "rank 3 busy for 300 s while 3 ranks wait");
  }
}

// Every rank computes a little, around the working bar (1% of a core): over
// a window of 3 s two ranks got 5 clock ticks, two got 2, when the silence
// reached the timeout. That split is the noise of a few ticks, not two ranks
// busy while two wait: no verdict, never hung. (Seen under a 2-core CI's
// load: "ranks 0,1 busy for 2 s while 1 rank waits", a healthy job
// restarted.)
TEST(HangWatch, RanksComputingALittleAreNeverSplitIntoBusyAndWaitingByAFewTicks) {
  Job job;
  for (int i = 1; i <= 40; ++i) {
    for (auto& [rank, progress] : job.p)
      progress.cpu_ticks += rank < 2 ? (i % 3 == 0 ? 1 : 2) : (i % 3 == 0 ? 0 : 1);
    if (auto v = job.tick()) {
      ASSERT_EQ(v->kind, Kind::suspect) << v->reason;
      if (auto d = job.watch.diagnosed({}, "", job.now)) {
        EXPECT_NE(d->kind, Kind::hung) << d->reason;
      }
    }
  }
  // The same two ranks among plainly idle ones (a tick in 5 s: a loader's
  // poll) are busy while the others wait.
  Job busy;
  for (int i = 1; i <= 10; ++i) {
    for (auto& [rank, progress] : busy.p)
      progress.cpu_ticks += rank < 2 ? (i % 3 == 0 ? 1 : 2) : (i % 5 == 0 ? 1 : 0);
    busy.tick();
  }
  ASSERT_TRUE(busy.watch.suspect());
  auto v = busy.watch.diagnosed({}, "", busy.now);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::hung);
  EXPECT_EQ(v->reason, "ranks 0,1 busy for 10 s while 2 ranks wait");
}

TEST(HangWatch, AWorkingOutlierBeforeTheTimeoutIsHarmless) {
  Learning job;
  job.train(20, 1);
  for (int i = 1; i <= 10; ++i) job.tick();  // all idle: suspect
  ASSERT_TRUE(job.watch.suspect());
  // By the time its stack is in, rank 0 works again (a slow checkpoint).
  for (int i = 0; i < 3; ++i) {
    job.p[0].io_bytes += 1 << 20;
    job.now += 1s;
    job.watch.observe(0, job.p[0], job.now);
  }
  auto v = job.watch.diagnosed({0},
                               "rank 0 in save (torch/serialization.py) while 3 ranks are "
                               "in barrier (c10d.py)",
                               job.now);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::harmless);
  EXPECT_EQ(v->reason,
            "rank 0 works while the others wait: left alone up to the hang timeout "
            "(300 s)");
  EXPECT_FALSE(job.tick());  // and the suspect period ended quietly
  EXPECT_FALSE(job.watch.suspect());
}

TEST(HangWatch, EveryRankCheckpointingAtOnceOrComputingInSilenceIsNeverHung) {
  Learning job;
  job.train(20, 1);
  for (int i = 1; i <= 900; ++i) {  // 15 minutes: three timeouts
    for (auto& [rank, progress] : job.p) {
      progress.io_bytes += 8 << 20;
      progress.state = i % 2 ? 'D' : 'R';
    }
    if (auto v = job.tick()) {
      EXPECT_EQ(v->kind, Kind::suspect) << i;
      auto d = job.watch.diagnosed({}, "", job.now);
      ASSERT_TRUE(d);
      EXPECT_EQ(d->kind, Kind::harmless) << d->reason;
    }
  }
}

TEST(HangWatch, AStragglerWhoseStepsStillCountIsNeverSuspect) {
  Learning job;
  job.train(20, 1);
  // Rank 2 five times slower: only rank 0 prints, once every 5 s, and the
  // others wait most of each step.
  for (int s = 0; s < 60; ++s) {
    for (int i = 0; i < 5; ++i) {
      job.p[2].cpu_ticks += 100;
      if (i == 4) job.p[0].output_lines += 1;
      EXPECT_FALSE(job.tick()) << s;
    }
  }
}

}  // namespace
}  // namespace atl::supervisor
