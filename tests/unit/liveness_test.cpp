#include "atl/supervisor/liveness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

using atl::HeartbeatOptions;
using atl::supervisor::GpuCount;
using atl::supervisor::Liveness;
using namespace std::chrono_literals;

namespace {

// 500 ms heartbeats, lost after 3 s of silence, a tick every 100 ms: the
// supervisor's defaults, in fake time.
struct FakeTime {
  Liveness live{HeartbeatOptions{500ms, 3000ms}, 100ms};
  Liveness::TimePoint now{};

  // Ticks every 100 ms for `span`; the silent pods reported, in order.
  std::vector<std::string> run(std::chrono::milliseconds span, int* heartbeats = nullptr) {
    std::vector<std::string> silent;
    for (auto end = now + span; now < end;) {
      now += 100ms;
      auto t = live.tick(now);
      if (heartbeats && t.send_heartbeats) ++*heartbeats;
      EXPECT_FALSE(t.stall);
      silent.insert(silent.end(), t.silent.begin(), t.silent.end());
    }
    return silent;
  }
};

}  // namespace

TEST(Liveness, HeartbeatsGoOutOncePerIntervalFromTheFirstTick) {
  FakeTime f;
  f.now += 1s;
  EXPECT_TRUE(f.live.tick(f.now).send_heartbeats);  // the first tick sends at once
  int sent = 0;
  f.run(5s, &sent);
  EXPECT_EQ(sent, 10);  // 5 s of 500 ms intervals
}

TEST(Liveness, APodHeardFromStaysAndASilentOneIsReportedOnceAfterTheTimeout) {
  FakeTime f;
  f.live.watch("a", f.now);
  f.live.watch("b", f.now);
  for (int i = 0; i < 30; ++i) {
    EXPECT_TRUE(f.run(100ms).empty());
    f.live.heard("a", f.now);
  }
  // b has been silent for 3 s now; the next tick past it reports it.
  EXPECT_EQ(f.run(200ms), (std::vector<std::string>{"b"}));
  EXPECT_EQ(f.run(5s), (std::vector<std::string>{"a"}));  // a went quiet too
  EXPECT_TRUE(f.run(10s).empty());                        // nobody twice
}

TEST(Liveness, AForgottenPodIsNeverReportedAndAWatchedOneAgainStartsAfresh) {
  FakeTime f;
  f.live.watch("a", f.now);
  f.run(2s);
  f.live.forget("a");
  EXPECT_TRUE(f.run(5s).empty());
  EXPECT_FALSE(f.live.silence("a", f.now));
  f.live.watch("a", f.now);  // rejoined
  EXPECT_EQ(f.live.silence("a", f.now), 0ms);
  EXPECT_TRUE(f.run(2900ms).empty());
  EXPECT_EQ(f.run(200ms), (std::vector<std::string>{"a"}));
}

TEST(Liveness, ALateTickIsTheSupervisorsStallNotThePodsSilence) {
  FakeTime f;
  f.live.watch("a", f.now);
  f.run(1s);
  f.live.heard("a", f.now);
  // The supervisor's mailbox was 5 s deep: its next tick comes 5 s late, and
  // the heartbeats that waited in it have not been read yet.
  f.now += 5100ms;
  auto late = f.live.tick(f.now);
  ASSERT_TRUE(late.stall);
  EXPECT_EQ(*late.stall, 5000ms);
  EXPECT_TRUE(late.silent.empty());
  EXPECT_TRUE(late.send_heartbeats);
  // Then the pod is heard again (its queued heartbeats): nothing is lost.
  f.live.heard("a", f.now);
  EXPECT_TRUE(f.run(2s).empty());
}

TEST(Liveness, ALittleLateTickIsExcusedWithoutAWarningAndAShortOneNotAtAll) {
  FakeTime f;
  f.live.watch("a", f.now);
  f.run(1s);
  f.now += 800ms;  // 700 ms late: more than an interval, under the warning
  auto t = f.live.tick(f.now);
  EXPECT_FALSE(t.stall);
  EXPECT_EQ(f.live.silence("a", f.now), 1100ms);  // 1.8 s, less the 700 ms excused
  f.now += 400ms;                                 // 300 ms late: within an interval, not excused
  f.live.tick(f.now);
  EXPECT_EQ(f.live.silence("a", f.now), 1500ms);
}

TEST(Liveness, AGpuIsLostOnlyWhenCountedBelowWhatWasCheckedAndNotAlreadyQuarantined) {
  GpuCount c{8, 7, true, false, false};
  EXPECT_TRUE(atl::supervisor::lost_a_gpu(c));
  EXPECT_FALSE(atl::supervisor::lost_a_gpu({8, 8, true, false, false}));
  EXPECT_FALSE(atl::supervisor::lost_a_gpu({8, -1, true, false, false}));  // cannot count
  EXPECT_FALSE(atl::supervisor::lost_a_gpu({8, 0, false, false, false}));  // before the pre-flight
  // Recreated on the machine whose GPU went: quarantined, not removed again...
  EXPECT_FALSE(atl::supervisor::lost_a_gpu({8, 7, true, true, false}));
  // ...unless it runs ranks there.
  EXPECT_TRUE(atl::supervisor::lost_a_gpu({8, 7, true, true, true}));
}

TEST(Liveness, AGpuFaultRemovesThePodUnlessItIsQuarantinedOnATaintedMachineRunningNoRanks) {
  EXPECT_TRUE(atl::supervisor::gpu_fault_removes_pod(false, false));  // before the pre-flight too
  EXPECT_TRUE(atl::supervisor::gpu_fault_removes_pod(false, true));
  EXPECT_TRUE(atl::supervisor::gpu_fault_removes_pod(true, true));
  EXPECT_FALSE(atl::supervisor::gpu_fault_removes_pod(true, false));
}
