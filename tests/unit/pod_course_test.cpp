// PodCourse in fake time (no sleeps, no processes), agents as ints: joins,
// heartbeats each interval, a silent pod fenced and lost once, the
// supervisor's own stall excused, a lost GPU or a GPU fault tainting and
// deleting, evictions, atlctl delete all-or-nothing, a pod lost twice
// changing nothing; and through the JobController as the shell wires them:
// heartbeat loss -> fence -> restart on the spare.
#include "atl/supervisor/pod_course.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "atl/supervisor/job_controller.hpp"
#include "unit/fake_job_effects.hpp"

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using Course = PodCourse<int>;
using TimePoint = Course::TimePoint;

template <class T>
std::vector<T> all(const Course::Effects& effects) {
  std::vector<T> out;
  for (const auto& e : effects)
    if (auto* x = std::get_if<T>(&e)) out.push_back(*x);
  return out;
}

NodeInfo info(int i, int gpus = 0) {
  NodeInfo n;
  n.pod = "j1-worker-" + std::to_string(i);
  n.address = "10.0.0." + std::to_string(i);
  n.machine = "node-" + std::to_string(i);
  n.gpus = gpus;
  return n;
}

// Three pods (two workers and a spare), heartbeats every 500 ms, lost after
// 3 s of silence, the liveness timer every 100 ms.
struct Fleet {
  Course course{
      "j1", {"j1-worker-0", "j1-worker-1", "j1-worker-2"}, HeartbeatOptions{500ms, 3s}, 100ms};
  TimePoint now = TimePoint{} + 1h;

  void join_all(int gpus = 0) {
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(course.join(info(i, gpus), 100 + i, {}, now));
  }
  // Ticks for `d` (every 100 ms); every pod but `silent` answers each tick.
  Course::Effects run(std::chrono::milliseconds d, const std::string& silent = "") {
    Course::Effects out;
    for (auto end = now + d; now < end;) {
      now += 100ms;
      for (const auto& [pod, joined] : course.registry().joined_pods())
        if (pod != silent)
          for (auto& e : course.on_heartbeat(pod, -1, {}, now, true)) out.push_back(e);
      for (auto& e : course.on_tick(now, true)) out.push_back(std::move(e));
    }
    return out;
  }
};

TEST(PodCourse, HeartbeatsGoToEveryJoinedPodOncePerInterval) {
  Fleet f;
  f.join_all();
  auto out = f.run(2s);
  auto beats = all<pods::Heartbeat<int>>(out);
  EXPECT_EQ(beats.size(), 3u * 4);  // 4 intervals of 500 ms, 3 pods each
  EXPECT_EQ(all<pods::HeartbeatRound>(out).size(), 4u);
  EXPECT_TRUE(all<pods::Gone>(out).empty());
}

TEST(PodCourse, ASilentPodIsFencedAndLostOnceWithItsLine) {
  Fleet f;
  f.join_all();
  auto out = f.run(5s, "j1-worker-1");
  auto fenced = all<pods::Fence<int>>(out);
  ASSERT_EQ(fenced.size(), 1u);
  EXPECT_EQ(fenced[0].agent, 101);
  EXPECT_EQ(fenced[0].detail, "pod j1-worker-1 stopped answering (no heartbeat for 3s)");
  auto gone = all<pods::Gone>(out);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].pod, "j1-worker-1");
  EXPECT_EQ(gone[0].fault.kind, FaultKind::pod_hung);
  EXPECT_EQ(all<pods::Forget<int>>(out).size(), 1u);
  // Fenced before it is lost: the agent hears it while its handle is known.
  auto fence_at = std::find_if(out.begin(), out.end(), [](const auto& e) {
    return std::holds_alternative<pods::Fence<int>>(e);
  });
  auto gone_at = std::find_if(out.begin(), out.end(),
                              [](const auto& e) { return std::holds_alternative<pods::Gone>(e); });
  EXPECT_LT(fence_at, gone_at);
  EXPECT_FALSE(f.course.registry().joined("j1-worker-1"));
  EXPECT_EQ(f.course.registry().standing("j1-worker-1"), PodStanding::lost);
  // Gone from the watch too: no heartbeat, no second loss.
  out = f.run(5s, "j1-worker-1");
  EXPECT_TRUE(all<pods::Gone>(out).empty());
  EXPECT_EQ(all<pods::Heartbeat<int>>(out).size(), 2u * 10);
}

TEST(PodCourse, TheSupervisorsOwnStallIsExcusedNotThePodsSilence) {
  Fleet f;
  f.join_all();
  f.run(1s);
  // The supervisor's mailbox held its timer for 5 s: the heartbeats waited too.
  f.now += 5s;
  auto out = f.course.on_tick(f.now, true);
  auto stalled = all<pods::Stalled>(out);
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_GE(stalled[0].late, 4s);
  EXPECT_TRUE(all<pods::Gone>(out).empty());
}

TEST(PodCourse, ALostGpuTaintsDeletesAndLosesThePodOnlyOnceChecked) {
  Fleet f;
  f.join_all(2);
  // Before a pre-flight found them, a count says nothing.
  EXPECT_TRUE(f.course.on_heartbeat("j1-worker-0", 1, {false, false, false}, f.now, true).empty());
  auto out = f.course.on_heartbeat("j1-worker-0", 1, {true, true, false}, f.now, true);
  ASSERT_EQ(out.size(), 4u);
  auto taint = std::get<pods::TaintPlatform>(out[0]);
  EXPECT_EQ(taint.detail, "pod j1-worker-0 lost a GPU (it declared 2, 1 are there)");
  EXPECT_EQ(std::get<pods::Delete<int>>(out[1]).agent, 100);
  EXPECT_EQ(std::get<pods::Gone>(out[3]).fault.kind, FaultKind::gpu_lost);
  // A pod quarantined on a tainted machine, running nothing: left alone.
  EXPECT_TRUE(f.course.on_heartbeat("j1-worker-1", 1, {true, false, true}, f.now, true).empty());
}

TEST(PodCourse, AGpuFaultRemovesThePodUnlessQuarantined) {
  Fleet f;
  f.join_all(1);
  bool quarantined = true;
  auto out = f.course.on_gpu_fault("j1-worker-2", "Xid 79 (GPU fell off the bus)",
                                   {true, false, false}, true, &quarantined);
  EXPECT_FALSE(quarantined);
  ASSERT_EQ(all<pods::Gone>(out).size(), 1u);
  EXPECT_EQ(all<pods::TaintPlatform>(out)[0].detail,
            "pod j1-worker-2: Xid 79 (GPU fell off the bus)");
  out = f.course.on_gpu_fault("j1-worker-1", "Xid 48", {true, false, true}, true, &quarantined);
  EXPECT_TRUE(quarantined);
  EXPECT_TRUE(out.empty());
  // A pod no longer there: nothing.
  EXPECT_TRUE(f.course.on_gpu_fault("j1-worker-2", "Xid 79", {}, true).empty());
}

TEST(PodCourse, AnEvictedPodIsLostWithItsGraceLine) {
  Fleet f;
  f.join_all();
  auto gone = all<pods::Gone>(f.course.evict("j1-worker-0", "SIGTERM", true));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].fault.kind, FaultKind::pod_lost);
  EXPECT_EQ(gone[0].fault.detail,
            "pod j1-worker-0 was lost: told to go (SIGTERM: evicted, drained or deleted; its "
            "ranks get their grace)");
  EXPECT_TRUE(f.course.evict("j1-worker-0", "SIGTERM", true).empty());  // once
}

TEST(PodCourse, APodLostBeforeTheStartIsMissingNotLost) {
  Fleet f;
  f.join_all();
  auto out = f.course.lose("j1-worker-2", {FaultKind::pod_lost, "j1-worker-2", "gone"}, false);
  EXPECT_EQ(all<pods::Gone>(out).size(), 1u);
  EXPECT_EQ(f.course.registry().standing("j1-worker-2"), PodStanding::missing);
}

TEST(PodCourse, DeleteIsAllOrNothing) {
  Fleet f;
  f.join_all();
  f.course.lose("j1-worker-2", {FaultKind::pod_lost, "j1-worker-2", "gone"}, true);
  auto refused = f.course.delete_pods("j1-worker-0,j1-worker-2", true);
  ASSERT_TRUE(std::holds_alternative<Refusal>(refused));
  EXPECT_NE(std::get<Refusal>(refused).text.find("pod j1-worker-2 is not in the job now (lost)"),
            std::string::npos);
  EXPECT_TRUE(f.course.registry().joined("j1-worker-0"));  // nothing changed
  auto done = f.course.delete_pods("j1-worker-0", true);
  ASSERT_TRUE(std::holds_alternative<Course::Effects>(done));
  const auto& out = std::get<Course::Effects>(done);
  EXPECT_EQ(std::get<pods::Record>(out[0]).text, "pod j1-worker-0 was deleted (atlctl delete)");
  EXPECT_EQ(std::get<pods::Delete<int>>(out[1]).agent, 100);
  EXPECT_EQ(std::get<pods::Gone>(out[3]).fault.kind, FaultKind::pod_deleted);
}

// The controller's side, as the shell wires them: a Gone goes to
// JobController::on_pod_gone; the pod's rejoin (Kubernetes recreates it) or
// the spare lets the restart go on.

TEST(PodCourse, HeartbeatLossFencesThePodAndRestartsTheJobOnTheSpare) {
  Fleet f;
  FakeEffects fx;
  for (int i = 0; i < 3; ++i) {
    const std::string pod = "j1-worker-" + std::to_string(i), node = "node-" + std::to_string(i);
    fx.pods.push_back({pod, i, node, true});
    fx.machines[pod] = node;
  }
  JobSpec spec;
  spec.job_id = "j1";
  spec.workers = 2;
  spec.max_restarts = 3;
  spec.grace = 5s;
  spec.ready_timeout = 60s;
  JobController ctl({spec, 0s}, &fx);
  ASSERT_TRUE(ctl.start(nullptr, 3));
  f.join_all();
  ctl.all_joined();
  fx.preflight_running = false;
  ctl.on_preflight_verdict({});
  ASSERT_EQ(ctl.state(), JobState::command);
  ASSERT_EQ(ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-1"}));

  auto out = f.run(5s, "j1-worker-1");  // its node froze: no heartbeat
  ASSERT_EQ(all<pods::Fence<int>>(out).size(), 1u);
  for (const auto& gone : all<pods::Gone>(out)) {
    fx.pods[1].joined = f.course.registry().joined(gone.pod);  // as the registry says
    ctl.on_pod_gone(gone.pod, gone.fault);
  }

  EXPECT_EQ(ctl.state(), JobState::restarting);
  EXPECT_EQ(ctl.restarts().used(), 1);
  EXPECT_EQ(ctl.restarts().history().back().kind, FaultKind::pod_hung);
  EXPECT_TRUE(fx.called("end_pod_work j1-worker-1"));
  EXPECT_TRUE(fx.called("stop_user_code"));
  fx.done = true;  // the ranks are gone; the spare takes its place
  ctl.maybe_relaunch();
  EXPECT_EQ(ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-2"}));
}

}  // namespace
}  // namespace atl::supervisor
