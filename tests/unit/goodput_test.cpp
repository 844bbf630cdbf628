// Goodput in fake time: a job's productive time against a hand count, each
// fault's detection, restart and re-warm, the first warm-up apart, a debug
// relaunch of the same attempt and a second fault during a restart counted
// once, the clock stopped at the end.
#include "atl/supervisor/goodput.hpp"

#include <gtest/gtest.h>

namespace atl::supervisor {
namespace {

constexpr std::int64_t s = 1000;  // ms

// Progress every second from `from` to `to` (inclusive).
void steps(Goodput& g, std::int64_t from, std::int64_t to) {
  for (std::int64_t t = from; t <= to; t += s) g.progress(t);
}

TEST(Goodput, NothingBeforeTheFirstLaunch) {
  Goodput g;
  g.progress(5 * s);
  g.fault("early", 6 * s);
  auto v = g.view(10 * s);
  EXPECT_EQ(v.elapsed_ms, 0);
  EXPECT_EQ(v.ratio, 0);
  EXPECT_EQ(v.faults, 0);
}

TEST(Goodput, AJobWithThreeFaultsMatchesAHandCount) {
  Goodput g;
  // Attempt 1: launched at 0, warms up 20 s, trains 20..100, hangs; found at 112.
  g.launched(1, 0);
  steps(g, 20 * s, 100 * s);
  g.fault("job hung: rank 1 in train_step", 112 * s);
  // Attempt 2: launched at 114, first step at 130, trains to 200; a pod lost at 201.
  g.launched(2, 114 * s);
  steps(g, 130 * s, 200 * s);
  g.fault("pod worker-2 was lost", 201 * s);
  // Attempt 3: launched at 205, first step at 220, trains to 300, crashes at 300.5.
  g.launched(3, 205 * s);
  steps(g, 220 * s, 300 * s);
  g.fault("rank 0 exited with 1", 300 * s + 500);
  // Attempt 4: launched at 303, first step at 318, trains to 400; the job ends at 401.
  g.launched(4, 303 * s);
  steps(g, 318 * s, 400 * s);
  g.ended(401 * s);

  auto v = g.view(999 * s);  // the clock stopped at the end
  // By hand: productive 80 + 70 + 80 + 82 = 312 s of 401 s.
  EXPECT_EQ(v.elapsed_ms, 401 * s);
  EXPECT_EQ(v.productive_ms, 312 * s);
  EXPECT_NEAR(v.ratio, 312.0 / 401.0, 1e-9);
  EXPECT_EQ(v.warmup_ms, 20 * s);
  EXPECT_EQ(v.faults, 3);
  // Detection 12 + 1 + 0.5; restart 2 + 4 + 2.5; re-warm 16 + 15 + 15.
  EXPECT_EQ(v.detection_ms, 13 * s + 500);
  EXPECT_EQ(v.restart_ms, 8 * s + 500);
  EXPECT_EQ(v.rewarm_ms, 46 * s);
  ASSERT_EQ(v.recent.size(), 3u);
  EXPECT_EQ(v.recent[0].attempt, 1);
  EXPECT_EQ(v.recent[0].reason, "job hung: rank 1 in train_step");
  EXPECT_EQ(v.recent[0].detection_ms, 12 * s);
  EXPECT_EQ(v.recent[0].restart_ms, 2 * s);
  EXPECT_EQ(v.recent[0].rewarm_ms, 16 * s);
  EXPECT_EQ(v.recent[2].detection_ms, 500);
  EXPECT_EQ(v.recent[2].restart_ms, 2500);
  EXPECT_EQ(v.recent[2].rewarm_ms, 15 * s);
  // Every second accounted for: productive + warm-up + the faults' costs,
  // and the training lost between each attempt's last progress and the next
  // one's (nothing here: the faults came right after their last progress).
  EXPECT_EQ(v.productive_ms + v.warmup_ms + v.detection_ms + v.restart_ms + v.rewarm_ms + s,
            v.elapsed_ms);  // the last second: from the last step to the end
}

TEST(Goodput, CostsNotKnownYetStayUnknownAndTheRunningAttemptCounts) {
  Goodput g;
  g.launched(1, 0);
  steps(g, 10 * s, 50 * s);
  auto v = g.view(55 * s);
  EXPECT_EQ(v.productive_ms, 40 * s);
  EXPECT_EQ(v.elapsed_ms, 55 * s);
  g.fault("job hung", 60 * s);
  v = g.view(61 * s);
  ASSERT_EQ(v.recent.size(), 1u);
  EXPECT_EQ(v.recent[0].detection_ms, 10 * s);
  EXPECT_EQ(v.recent[0].restart_ms, -1);  // not relaunched yet
  EXPECT_EQ(v.recent[0].rewarm_ms, -1);
  g.launched(2, 63 * s);
  v = g.view(64 * s);
  EXPECT_EQ(v.recent[0].restart_ms, 3 * s);
  EXPECT_EQ(v.recent[0].rewarm_ms, -1);  // no step yet
}

TEST(Goodput, ARelaunchOfTheSameAttemptAndASecondFaultDuringARestartCountOnce) {
  Goodput g;
  g.launched(1, 0);
  steps(g, 5 * s, 10 * s);
  g.launched(1, 12 * s);  // atlctl recover: the same attempt again
  steps(g, 13 * s, 20 * s);
  g.fault("a pod lost", 21 * s);
  g.fault("another pod lost while restarting", 22 * s);  // no attempt of its own
  g.launched(2, 25 * s);
  auto v = g.view(25 * s);
  EXPECT_EQ(v.faults, 1);
  EXPECT_EQ(v.productive_ms, 15 * s);  // 5..20: the first progress and the last
  EXPECT_EQ(v.recent[0].restart_ms, 4 * s);
}

TEST(Goodput, AnAttemptThatNeverProgressedCostsItsWholeLifeAsDetection) {
  Goodput g;
  g.launched(1, 0);
  steps(g, 5 * s, 10 * s);
  g.fault("rank exited", 10 * s);
  g.launched(2, 11 * s);  // crashes on start-up
  g.fault("rank exited again", 14 * s);
  g.launched(3, 15 * s);
  g.progress(20 * s);
  auto v = g.view(20 * s);
  EXPECT_EQ(v.faults, 2);
  EXPECT_EQ(v.recent[1].detection_ms, 3 * s);
  EXPECT_EQ(v.recent[0].rewarm_ms, -1);  // attempt 2 never trained
  EXPECT_EQ(v.recent[1].rewarm_ms, 5 * s);
}

}  // namespace
}  // namespace atl::supervisor
