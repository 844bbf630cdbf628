// JobController against a fake JobEffects: the job's course from start to
// outcome, faults within and past the budget, pre-flight verdicts, pods lost
// twice, timers of an older round, the ending with and without linger, a
// resumed head, atlctl taint.
#include "atl/supervisor/job_controller.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "unit/fake_job_effects.hpp"

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;

JobSpec spec(int workers, int max_restarts) {
  JobSpec job;
  job.job_id = "j1";
  job.workers = workers;
  job.max_restarts = max_restarts;
  job.grace = 5s;
  job.ready_timeout = 60s;
  return job;
}

// `pods` worker pods, each on a node of its own (node-K), none joined.
void add_pods(FakeEffects& fx, int pods) {
  for (int i = 0; i < pods; ++i) {
    std::string name = "j1-worker-" + std::to_string(i);
    fx.pods.push_back({name, i, "node-" + std::to_string(i), false});
    fx.machines[name] = "node-" + std::to_string(i);
  }
}

struct Job {
  FakeEffects fx;
  JobController ctl;

  Job(int workers, int pods, int max_restarts, std::chrono::milliseconds linger = 0ms)
      : Job(spec(workers, max_restarts), pods, linger) {}
  Job(JobSpec job, int pods, std::chrono::milliseconds linger = 0ms) {
    add_pods(fx, pods);
    ctl = JobController({std::move(job), linger}, &fx);
  }

  // Started, every pod joined, pre-flight passed: user code runs.
  void run() {
    ASSERT_TRUE(ctl.start(nullptr, fx.pods.size()));
    fx.join_all();
    ctl.all_joined();
    ASSERT_TRUE(fx.preflight_running);
    fx.preflight_running = false;
    ctl.on_preflight_verdict({});
    ASSERT_EQ(ctl.state(), JobState::command);
  }

  // `pod` goes (`kind`), its ranks end, it is back and passes the
  // pre-flight: the next attempt runs (or the job waits, or failed).
  void lose_and_relaunch(const std::string& pod, FaultKind kind, const std::string& detail) {
    ctl.on_pod_gone(pod, {kind, pod, detail});
    fx.done = true;
    ctl.maybe_relaunch();
    fx.preflight_running = false;
    ctl.on_preflight_verdict({});
  }
};

TEST(JobController, AStartRecordsTheSubmissionAndArmsTheReadyTimer) {
  Job job(2, 2, 3);
  ASSERT_TRUE(job.ctl.start(nullptr, 2));
  ASSERT_EQ(job.fx.events.size(), 1u);
  EXPECT_EQ(job.fx.events[0].text, "job j1 submitted: waiting for 2 workers");
  ASSERT_EQ(job.fx.saves.size(), 1u);
  EXPECT_EQ(job.fx.saves[0].state, "pending");
  auto ready = job.fx.last_timer(JobTimer::ready);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->delay, 60s);
  EXPECT_EQ(ready->tag, 0);
}

// A start that talks: every 10 s while pending, who joined and who is
// missing against the ready timeout; silent once the job runs, and never
// past the timeout (that says its own line).
TEST(JobController, APendingJobSaysWhoItWaitsForEveryTenSeconds) {
  Job job(2, 2, 3);
  ASSERT_TRUE(job.ctl.start(nullptr, 2));
  auto tick = job.fx.last_timer(JobTimer::waiting);
  ASSERT_TRUE(tick);
  EXPECT_EQ(tick->delay, 10s);
  EXPECT_EQ(tick->tag, 1);
  job.ctl.on_timer(JobTimer::waiting, 1);
  EXPECT_TRUE(job.fx.printed(
      "waiting for workers: 0/2 joined, missing j1-worker-0, j1-worker-1 (10s of 1m)"))
      << job.fx.prints.back();
  job.fx.pods[0].joined = true;
  job.ctl.on_timer(JobTimer::waiting, job.fx.last_timer(JobTimer::waiting)->tag);
  EXPECT_TRUE(job.fx.printed("waiting for workers: 1/2 joined, missing j1-worker-1 (20s of 1m)"))
      << job.fx.prints.back();
  // At the ready timeout it stops (the timeout's own line says the rest).
  const auto before = job.fx.prints.size();
  const auto armed = job.fx.timers.size();
  job.ctl.on_timer(JobTimer::waiting, 6);  // 60 s: the timeout
  EXPECT_EQ(job.fx.prints.size(), before);
  EXPECT_EQ(job.fx.timers.size(), armed);
  // Thousands of pods: eight named, then how many more.
  Job big(12, 12, 3);
  ASSERT_TRUE(big.ctl.start(nullptr, 12));
  big.fx.pods[0].joined = true;
  big.ctl.on_timer(JobTimer::waiting, 1);
  EXPECT_EQ(big.fx.prints.back(),
            "waiting for workers: 1/12 joined, missing j1-worker-1, j1-worker-2, j1-worker-3, "
            "j1-worker-4, j1-worker-5, j1-worker-6, j1-worker-7, j1-worker-8 and 3 more (10s of "
            "1m)");
  // Running: nothing more.
  Job running(1, 1, 3);
  running.run();
  const auto quiet = running.fx.prints.size();
  running.ctl.on_timer(JobTimer::waiting, 1);
  EXPECT_EQ(running.fx.prints.size(), quiet);
}

TEST(JobController, AJobOfNoPodsArmsNoReadyTimer) {
  Job job(0, 0, 3);
  ASSERT_TRUE(job.ctl.start(nullptr, 0));
  EXPECT_FALSE(job.fx.last_timer(JobTimer::ready));
  EXPECT_FALSE(job.fx.last_timer(JobTimer::waiting));
}

TEST(JobController, EveryPodJoinedChoosesTheActiveOnesAndRunsThePreflight) {
  Job job(2, 3, 3);
  job.run();
  EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-1"}));
  EXPECT_TRUE(job.fx.called("start_user_code"));
  EXPECT_FALSE(job.fx.called("next_attempt"));  // the first attempt is not a restart
}

TEST(JobController, TooFewUntaintedPodsFailTheStartSayingWhy) {
  Job job(2, 2, 3);
  ASSERT_TRUE(job.ctl.start(nullptr, 2));
  job.fx.pods[0].joined = true;  // worker-1 never came, yet all_joined arrives
  job.ctl.all_joined();
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_NE(job.ctl.failure().find("cannot start: "), std::string::npos) << job.ctl.failure();
  EXPECT_FALSE(job.fx.called("start_preflight"));
  EXPECT_EQ(job.fx.outcome, 1);  // nothing ran, no workers to wait for, no linger
}

TEST(JobController, APendingReadyTimeoutNamesTheMissingPodsAndFailsOnANoRestartBudget) {
  Job job(2, 2, 0);
  ASSERT_TRUE(job.ctl.start(nullptr, 2));
  job.fx.pods[0].joined = true;
  job.ctl.on_timer(JobTimer::ready, 0);
  EXPECT_TRUE(job.fx.printed("workers not ready after 1m: missing j1-worker-1"));
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_TRUE(job.fx.printed("Job status:  failed"));
  EXPECT_EQ(job.fx.outcome, 1);
}

TEST(JobController, AFailedPreflightWithASpareTaintsTheNodeAndRestartsAfterAPause) {
  Job job(2, 3, 3);
  ASSERT_TRUE(job.ctl.start(nullptr, 3));
  job.fx.join_all();
  job.ctl.all_joined();
  job.fx.preflight_running = false;  // the round ended with a verdict
  job.ctl.on_preflight_verdict({"j1-worker-1", "no GPU 3"});
  EXPECT_TRUE(job.ctl.taints().tainted("node-1"));
  EXPECT_EQ(job.ctl.state(), JobState::restarting);
  EXPECT_EQ(job.ctl.restarts().used(), 1);
  // Not at once (the same check would fail the same way): after the pause.
  EXPECT_FALSE(job.fx.preflight_running);
  auto retry = job.fx.last_timer(JobTimer::restart_retry);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->delay, JobController::kRetryPause);
  job.ctl.on_timer(JobTimer::restart_retry, retry->tag - 1);  // an older round's: moot
  EXPECT_FALSE(job.fx.preflight_running);
  job.ctl.on_timer(JobTimer::restart_retry, retry->tag);
  EXPECT_TRUE(job.fx.preflight_running);
  EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-2"}));
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({});
  EXPECT_EQ(job.ctl.state(), JobState::command);
  EXPECT_TRUE(job.fx.printed("job restarted: attempt 2 (restart 1/3)"));
}

TEST(JobController, AFailedPreflightWithNoSpareFailsAtOnce) {
  Job job(2, 2, 3);
  ASSERT_TRUE(job.ctl.start(nullptr, 2));
  job.fx.join_all();
  job.ctl.all_joined();
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({"j1-worker-0", "working dir is not writable"});
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_EQ(job.ctl.failure(), "working dir is not writable");
  EXPECT_EQ(job.ctl.restarts().used(), 0);
}

TEST(JobController, ALostPodRestartsWithinTheBudgetOnceTheRanksAreGone) {
  Job job(2, 2, 2);
  job.run();
  job.fx.pods[1].joined = false;  // as the registry has it when it says so
  job.ctl.on_pod_gone("j1-worker-1",
                      {FaultKind::pod_lost, "j1-worker-1", "pod j1-worker-1 was lost"});
  EXPECT_EQ(job.ctl.state(), JobState::restarting);
  EXPECT_TRUE(job.fx.called("end_pod_work j1-worker-1"));
  EXPECT_TRUE(job.fx.called("stop_user_code"));
  auto stop = job.fx.last_timer(JobTimer::restart_stop);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->delay, 5s + JobController::kStopSlack);
  EXPECT_FALSE(job.fx.preflight_running);  // no spare: nothing to check yet
  // The pod is not back yet: the ranks' end alone does not relaunch.
  job.fx.done = true;
  job.ctl.on_user_code_ended({});
  EXPECT_FALSE(job.fx.preflight_running);
  job.fx.pods[1].joined = true;
  job.ctl.maybe_relaunch();  // the pod is back
  EXPECT_TRUE(job.fx.preflight_running);
  ASSERT_FALSE(job.ctl.restarts().history().empty());
  EXPECT_EQ(job.ctl.restarts().history()[0].attempt, 1);  // the attempt the fault ended
}

// The pre-flight of the next attempt's pods runs while the faulted attempt's
// ranks stop (each took ~0.25 s of a restart at 1,000 pods, one after the
// other); the launch waits for both, in either order.
TEST(JobController, ThePreflightRunsWhileTheFaultedRanksStopAndTheLaunchWaitsForBoth) {
  Job job(2, 3, 3);  // a spare
  job.run();
  auto launches = [&] {
    return std::count(job.fx.calls.begin(), job.fx.calls.end(), "start_user_code");
  };
  ASSERT_EQ(launches(), 1);
  job.fx.pods[1].joined = false;
  job.ctl.on_pod_gone("j1-worker-1",
                      {FaultKind::pod_lost, "j1-worker-1", "pod j1-worker-1 was lost"});
  EXPECT_TRUE(job.fx.called("stop_user_code"));
  EXPECT_TRUE(job.fx.preflight_running);  // at once, on the spare's set
  EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-2"}));
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({});
  EXPECT_EQ(job.ctl.state(), JobState::restarting);  // the ranks are still stopping
  EXPECT_EQ(launches(), 1);
  job.ctl.maybe_relaunch();  // a pod joining meanwhile: still nothing to do
  EXPECT_FALSE(job.fx.preflight_running);
  EXPECT_EQ(launches(), 1);
  job.fx.done = true;
  job.ctl.on_user_code_ended({});
  EXPECT_EQ(job.ctl.state(), JobState::command);
  EXPECT_EQ(launches(), 2);
  EXPECT_TRUE(job.fx.printed("job restarted: attempt 2 (restart 1/3)"));

  // The other order: the ranks are heard first, the launch waits for the pass.
  job.fx.done = false;
  job.fx.pods[2].joined = false;
  job.fx.pods[1].joined = true;  // worker-1 came back: it takes worker-2's place
  job.ctl.on_pod_gone("j1-worker-2",
                      {FaultKind::pod_lost, "j1-worker-2", "pod j1-worker-2 was lost"});
  EXPECT_TRUE(job.fx.preflight_running);
  job.fx.done = true;
  job.ctl.on_user_code_ended({});
  EXPECT_EQ(job.ctl.state(), JobState::restarting);  // the pre-flight is still out
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({});
  EXPECT_EQ(job.ctl.state(), JobState::command);
  EXPECT_EQ(launches(), 3);
}

// A pass held for the stopping ranks is for the pods it checked: one of them
// lost meanwhile, the next choice is checked again, never launched unchecked.
TEST(JobController, APassHeldWhileTheRanksStopIsDroppedWhenItsPodsChange) {
  Job job(2, 4, 3);  // two spares
  job.run();
  job.fx.pods[1].joined = false;
  job.ctl.on_pod_gone("j1-worker-1",
                      {FaultKind::pod_lost, "j1-worker-1", "pod j1-worker-1 was lost"});
  ASSERT_TRUE(job.fx.preflight_running);
  EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-2"}));
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({});  // passed; the ranks still stop
  job.fx.pods[2].joined = false;     // the spare it chose goes too
  job.ctl.on_pod_gone("j1-worker-2",
                      {FaultKind::pod_lost, "j1-worker-2", "pod j1-worker-2 was lost"});
  EXPECT_TRUE(job.fx.preflight_running);  // the new choice, checked
  EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-3"}));
  job.fx.done = true;
  job.ctl.on_user_code_ended({});
  EXPECT_EQ(job.ctl.state(), JobState::restarting);  // not on the old pass
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({});
  EXPECT_EQ(job.ctl.state(), JobState::command);
}

TEST(JobController, ARankThatDoesNotReportAfterTheStopIsAbandonedAndTheRestartGoesOn) {
  Job job(1, 1, 2);
  job.run();
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_hung, "j1-worker-0", "stopped answering"});
  auto stop = job.fx.last_timer(JobTimer::restart_stop);
  ASSERT_TRUE(stop);
  job.ctl.on_timer(JobTimer::restart_stop, stop->tag);
  EXPECT_TRUE(job.fx.called("abandon_user_code: did not report after the stop"));
  EXPECT_TRUE(job.fx.preflight_running);
}

TEST(JobController, ASpentBudgetFailsTheJobNamingItAndWaitsForTheRanksBounded) {
  Job job(1, 1, 0);
  job.run();
  Fault fault{FaultKind::rank_failed, "j1-worker-0", "rank 0 exited with code 3"};
  ExitMeaning meaning{ExitMeaning::Kind::fault, fault};
  EXPECT_TRUE(job.ctl.on_user_code_ended(meaning));
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_EQ(job.ctl.failure(), "rank 0 exited with code 3");
  // Other ranks still run: stopped, and the end waits for them (bounded).
  EXPECT_TRUE(job.fx.called("stop_user_code"));
  EXPECT_FALSE(job.fx.outcome);
  ASSERT_TRUE(job.fx.last_timer(JobTimer::fail_stop));
  job.ctl.on_timer(JobTimer::fail_stop, 0);
  EXPECT_TRUE(job.fx.called("wind_down failed"));
  EXPECT_TRUE(job.fx.printed("job failed: rank 0 exited with code 3"));
  EXPECT_EQ(job.fx.outcome, 1);
}

TEST(JobController, TheLastRestartOfTheBudgetFailsWithTheCountAndOneLinePerAttempt) {
  Job job(1, 1, 1);
  job.run();
  job.lose_and_relaunch("j1-worker-0", FaultKind::pod_lost, "pod lost (1)");
  ASSERT_EQ(job.ctl.state(), JobState::command);
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_lost, "j1-worker-0", "pod lost (2)"});
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_EQ(job.ctl.failure(), "pod lost (2); the restart budget is spent (1/1 restarts used)");
  job.fx.done = true;
  job.ctl.on_user_code_ended({});
  EXPECT_TRUE(job.fx.printed("  attempt 1: pod lost (1)"));
  EXPECT_TRUE(job.fx.printed("  attempt 2: pod lost (2)"));
}

TEST(JobController, ANodeLostTwiceInARowIsTaintedOnlyWhenASpareCanTakeItsPlace) {
  {
    Job job(1, 2, 5);
    job.run();
    for (int i = 0; i < 2; ++i) job.lose_and_relaunch("j1-worker-0", FaultKind::pod_lost, "lost");
    EXPECT_TRUE(job.ctl.taints().tainted("node-0"));
    EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-1"}));
  }
  {
    Job job(1, 1, 5);  // no spare: the node is kept
    job.run();
    for (int i = 0; i < 2; ++i) job.lose_and_relaunch("j1-worker-0", FaultKind::pod_lost, "lost");
    EXPECT_FALSE(job.ctl.taints().tainted("node-0"));
    EXPECT_EQ(job.ctl.state(), JobState::command);
  }
}

TEST(JobController, ADeletedPodIsNeverTaintedForBeingLostTwice) {
  Job job(1, 2, 5);
  job.run();
  for (int i = 0; i < 2; ++i)
    job.lose_and_relaunch("j1-worker-0", FaultKind::pod_deleted, "deleted");
  EXPECT_TRUE(job.ctl.taints().all().empty());
}

TEST(JobController, ALostSpareCostsNoRestart) {
  Job job(1, 2, 2);
  job.run();
  job.ctl.on_pod_gone("j1-worker-1", {FaultKind::pod_lost, "j1-worker-1", "spare gone"});
  EXPECT_EQ(job.ctl.state(), JobState::command);
  EXPECT_EQ(job.ctl.restarts().used(), 0);
  EXPECT_EQ(job.fx.events.back().text, "spare gone (a spare: no restart)");
  EXPECT_FALSE(job.fx.called("end_pod_work j1-worker-1"));
}

TEST(JobController, APodLostBeforeTheStartIsAwaitedAgain) {
  Job job(2, 2, 2);
  ASSERT_TRUE(job.ctl.start(nullptr, 2));
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_lost, "j1-worker-0", "gone"});
  EXPECT_EQ(job.ctl.state(), JobState::pending);
  EXPECT_EQ(job.ctl.restarts().used(), 0);
}

TEST(JobController, ADeleteWhileParkedRestartsWithoutARestartAndEndsTheDebugCommand) {
  Job job(1, 1, 1);
  job.run();
  ASSERT_TRUE(job.ctl.apply(JobEvent::debug_stop));
  ASSERT_TRUE(job.ctl.apply(JobEvent::debug_run));
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_deleted, "j1-worker-0", "deleted"});
  EXPECT_EQ(job.ctl.state(), JobState::restarting);
  EXPECT_EQ(job.ctl.restarts().used(), 0);
  EXPECT_TRUE(job.fx.called("end_parked_debug_run"));
  EXPECT_TRUE(job.fx.printed("job restarting (from debugCommand: no restart used, 0/1): deleted"));
}

TEST(JobController, APodLostWhileParkedIsAwaitedAndThePieceAboveIsTold) {
  Job job(1, 1, 1);
  job.run();
  ASSERT_TRUE(job.ctl.apply(JobEvent::debug_stop));
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_lost, "j1-worker-0", "lost while stopped"});
  EXPECT_EQ(job.ctl.state(), JobState::debugStop);
  EXPECT_TRUE(job.fx.called("pod_gone_while_parked: lost while stopped"));
  // A process ending while parked is the caller's to handle.
  EXPECT_FALSE(job.ctl.on_user_code_ended({}));
}

TEST(JobController, AStaleReadyTimerOfAnEarlierRoundIsMoot) {
  Job job(1, 1, 3);
  job.run();
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_lost, "j1-worker-0", "lost"});
  const std::int32_t round = job.ctl.restart_round();
  job.fx.pods[0].joined = false;
  job.ctl.on_timer(JobTimer::ready, round - 1);
  EXPECT_EQ(job.ctl.restarts().used(), 1);  // nothing happened
  job.ctl.on_timer(JobTimer::ready, round);
  EXPECT_TRUE(job.fx.printed("restart not ready after 1m: pods not back: j1-worker-0"));
  EXPECT_EQ(job.ctl.restarts().used(), 2);
}

TEST(JobController, ASucceededJobWaitsForItsWorkersThenLingers) {
  Job job(1, 1, 0, 30s);
  job.run();
  job.fx.leaving = 1;
  job.fx.done = true;
  EXPECT_TRUE(job.ctl.on_user_code_ended({ExitMeaning::Kind::succeeded, {}}));
  EXPECT_EQ(job.ctl.state(), JobState::succeeded);
  EXPECT_TRUE(job.fx.called("wind_down ok"));
  EXPECT_TRUE(job.fx.printed("Job status:  succeeded"));
  EXPECT_FALSE(job.fx.outcome);
  ASSERT_TRUE(job.fx.last_timer(JobTimer::shutdown));
  job.ctl.on_worker_left(0);
  EXPECT_TRUE(job.ctl.finished());
  ASSERT_TRUE(job.fx.last_timer(JobTimer::linger));
  EXPECT_EQ(job.fx.last_timer(JobTimer::linger)->delay, 30s);
  EXPECT_FALSE(job.fx.outcome);
  job.ctl.on_timer(JobTimer::linger, 0);
  EXPECT_EQ(job.fx.outcome, 0);
  job.ctl.on_timer(JobTimer::shutdown, 0);  // late: nothing more
}

TEST(JobController, WorkersThatDoNotLeaveAreNotWaitedForPastTheShutdownTimer) {
  Job job(1, 1, 0);
  job.run();
  job.fx.leaving = 1;
  job.fx.done = true;
  job.ctl.on_user_code_ended({ExitMeaning::Kind::succeeded, {}});
  EXPECT_FALSE(job.fx.outcome);
  job.ctl.on_timer(JobTimer::shutdown, 0);
  EXPECT_EQ(job.fx.outcome, 0);
}

TEST(JobController, ASignalEndsTheLingerOrSkipsIt) {
  {
    Job job(1, 1, 0, 30s);
    job.run();
    job.fx.done = true;
    job.ctl.on_user_code_ended({ExitMeaning::Kind::succeeded, {}});
    EXPECT_FALSE(job.fx.outcome);  // lingering
    job.ctl.cancel("SIGTERM");
    EXPECT_EQ(job.fx.outcome, 0);
  }
  {
    Job job(1, 1, 0, 30s);
    job.run();
    job.ctl.cancel("SIGTERM");
    EXPECT_EQ(job.ctl.state(), JobState::failed);
    EXPECT_EQ(job.ctl.failure(), "cancelled: SIGTERM");
    job.fx.done = true;
    job.ctl.on_user_code_ended({});
    EXPECT_EQ(job.fx.outcome, 1);  // no linger after a cancel
  }
}

TEST(JobController, RayModesSuccessStopsTheRestOfTheCluster) {
  JobSpec ray = spec(1, 0);
  ray.mode = JobMode::ray;
  Job job(ray, 1);
  job.run();
  job.fx.done = false;  // Ray's nodes still run
  job.ctl.on_user_code_ended({ExitMeaning::Kind::succeeded, {}});
  EXPECT_EQ(job.ctl.state(), JobState::succeeded);
  EXPECT_TRUE(job.fx.called("stop_user_code"));
  EXPECT_FALSE(job.fx.outcome);
  job.fx.done = true;
  job.ctl.on_user_code_ended({});
  EXPECT_EQ(job.fx.outcome, 0);
}

TEST(JobController, AResumedRunningJobCountsTheHeadsRestartAndKeepsItsTaintsAndTimeline) {
  Job job(1, 1, 2);
  os::JobRecord r;
  r.state = "command";
  r.attempt = 3;
  r.restarts = 1;
  r.taints["node-9"] = Taint{TaintSource::user, "set by atlctl taint", 5};
  r.events.push_back({7, "state", "pending -> initializing"});
  ASSERT_TRUE(job.ctl.start(&r, 1));
  EXPECT_EQ(job.ctl.restarts().used(), 2);
  EXPECT_TRUE(job.ctl.taints().tainted("node-9"));
  EXPECT_EQ(job.ctl.events().front().text, "pending -> initializing");
  EXPECT_TRUE(
      job.fx.printed("job resumed: the head restarted (attempt 3 was in command): restart 2/2"));
  EXPECT_FALSE(job.fx.called("reset_journal"));
}

TEST(JobController, AResumedJobWithASpentBudgetFails) {
  Job job(1, 1, 1);
  os::JobRecord r;
  r.state = "restarting";
  r.attempt = 2;
  r.restarts = 1;
  EXPECT_FALSE(job.ctl.start(&r, 1));
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_EQ(job.ctl.failure(),
            "the head restarted (attempt 2 was in restarting); the restart budget is spent (1/1 "
            "restarts used)");
  EXPECT_FALSE(job.fx.last_timer(JobTimer::ready));
}

TEST(JobController, AnEndedRecordMakesANewSubmission) {
  Job job(1, 1, 1);
  os::JobRecord r;
  r.state = "failed";
  r.restarts = 1;
  r.taints["node-0"] = Taint{TaintSource::platform, "lost twice", 5};
  ASSERT_TRUE(job.ctl.start(&r, 1));
  EXPECT_TRUE(job.fx.called("reset_journal"));
  EXPECT_EQ(job.ctl.restarts().used(), 0);
  EXPECT_TRUE(job.ctl.taints().all().empty());
  EXPECT_EQ(job.fx.events.back().text,
            "job j1 submitted anew (its last run failed): waiting for 1 workers");
}

TEST(JobController, AtlctlTaintRefusalsChangeNothing) {
  Job job(1, 2, 2);
  job.run();
  const std::size_t saves = job.fx.saves.size();
  const std::vector<std::string> machines{"node-0", "node-1"};
  auto bad_action = job.ctl.change_taints("toggle", "node-0", machines);
  ASSERT_TRUE(bad_action);
  EXPECT_EQ(bad_action->code, ReplyCode::usage);
  EXPECT_EQ(bad_action->text, "-a: unknown action 'toggle' (list, set or remove)");
  auto bad_list = job.ctl.change_taints("set", "", machines);
  ASSERT_TRUE(bad_list);
  EXPECT_EQ(bad_list->code, ReplyCode::usage);
  auto unknown = job.ctl.change_taints("set", "node-7", machines);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->code, ReplyCode::usage);
  EXPECT_TRUE(job.ctl.taints().all().empty());
  EXPECT_EQ(job.fx.saves.size(), saves);
  EXPECT_FALSE(job.fx.called("placement_changed"));
}

TEST(JobController, RemovingATaintLetsAWaitingRestartGoOn) {
  Job job(1, 1, 2);
  job.run();
  const std::vector<std::string> machines{"node-0"};
  ASSERT_FALSE(job.ctl.change_taints("set", "node-0", machines));
  job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_lost, "j1-worker-0", "lost"});
  job.fx.done = true;
  job.ctl.maybe_relaunch();
  EXPECT_FALSE(job.fx.preflight_running);  // its only node is tainted
  ASSERT_FALSE(job.ctl.change_taints("remove", "node-0", machines));
  EXPECT_TRUE(job.fx.preflight_running);
  EXPECT_TRUE(job.fx.called("placement_changed"));
}

TEST(JobController, TaintsAreRefusedOnceTheJobEnded) {
  Job job(1, 1, 0);
  job.run();
  job.ctl.fail(JobEvent::rank_failed, "done");
  auto refused = job.ctl.change_taints("set", "node-0", {"node-0"});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, ReplyCode::refused);
  EXPECT_EQ(refused->text, "job is in state failed: it has ended, taint is refused");
}

TEST(JobController, AHungJobTaintsTheCulpritsNodeAndRestartsOnTheSpare) {
  Job job(2, 3, 3);
  job.run();
  job.ctl.on_hung({"j1-worker-1"}, "rank 1 stopped (T) while the other 1 ranks made no progress");
  EXPECT_TRUE(job.ctl.taints().tainted("node-1"));
  EXPECT_EQ(job.ctl.taints().all().at("node-1").reason,
            "hung: rank 1 stopped (T) while the other 1 ranks made no progress");
  EXPECT_EQ(job.ctl.state(), JobState::restarting);
  EXPECT_EQ(job.ctl.restarts().used(), 1);
  ASSERT_FALSE(job.ctl.restarts().history().empty());
  EXPECT_EQ(job.ctl.restarts().history().back().kind, FaultKind::job_hung);
  EXPECT_TRUE(
      job.fx.printed("job hung: rank 1 stopped (T) while the other 1 ranks made no "
                     "progress"));
  job.fx.done = true;
  job.ctl.maybe_relaunch();
  EXPECT_EQ(job.ctl.active(), (std::vector<std::string>{"j1-worker-0", "j1-worker-2"}));
}

TEST(JobController, AHungJobWithoutASpareOrACulpritRestartsWithoutATaint) {
  Job job(2, 2, 3);
  job.run();
  job.ctl.on_hung({"j1-worker-1"}, "rank 1 stopped (T)");
  EXPECT_TRUE(job.ctl.taints().all().empty());  // it would leave too few pods
  EXPECT_EQ(job.ctl.state(), JobState::restarting);
  Job idle(2, 3, 3);
  idle.run();
  idle.ctl.on_hung({}, "every rank idle (no CPU time, no output) for 10 s");
  EXPECT_TRUE(idle.ctl.taints().all().empty());
  EXPECT_EQ(idle.ctl.state(), JobState::restarting);
}

TEST(JobController, GoodputCountsTrainingAndEachFaultsDetectionRestartAndRewarm) {
  Job job(2, 3, 3);
  job.fx.now_ms = 10'000;
  job.run();  // attempt 1 launched at 10 s
  for (std::int64_t t = 30'000; t <= 100'000; t += 1000) {
    job.fx.now_ms = t;
    job.ctl.on_progress();
  }
  job.fx.now_ms = 112'000;  // found hung 12 s after its last progress
  job.ctl.on_hung({"j1-worker-1"}, "rank 1 in train_step");
  job.fx.now_ms = 115'000;
  job.fx.done = true;
  job.ctl.maybe_relaunch();
  job.fx.preflight_running = false;
  job.ctl.on_preflight_verdict({});  // attempt 2 launched at 115 s
  ASSERT_EQ(job.ctl.state(), JobState::command);
  job.fx.now_ms = 125'000;
  job.ctl.on_progress();
  job.fx.now_ms = 130'000;
  job.ctl.on_progress();
  auto g = job.ctl.goodput();
  EXPECT_EQ(g.elapsed_ms, 120'000);
  EXPECT_EQ(g.productive_ms, 70'000 + 5'000);
  EXPECT_EQ(g.warmup_ms, 20'000);
  EXPECT_EQ(g.faults, 1);
  EXPECT_EQ(g.detection_ms, 12'000);
  EXPECT_EQ(g.restart_ms, 3'000);
  EXPECT_EQ(g.rewarm_ms, 10'000);
  ASSERT_EQ(g.recent.size(), 1u);
  EXPECT_EQ(g.recent[0].reason, "job hung: rank 1 in train_step");
  EXPECT_EQ(g.recent[0].attempt, 1);
}

TEST(JobController, AStragglerIsAnEventAndWithTaintItsNodeLeavesAtTheNextRestart) {
  {
    Job job(2, 3, 3);  // report, the default: said, nothing else
    job.run();
    job.ctl.on_straggler("j1-worker-1", "rank 1 is a straggler: CPU 100%");
    EXPECT_EQ(job.fx.events.back().kind, "straggler");
    EXPECT_TRUE(is_fault_kind("straggler"));
    job.ctl.on_hung({}, "every rank idle");
    EXPECT_TRUE(job.ctl.taints().all().empty());
  }
  {
    JobSpec tainting = spec(2, 3);
    tainting.on_straggler = OnStraggler::taint;
    Job job(tainting, 3);
    job.run();
    job.ctl.on_straggler("j1-worker-1", "rank 1 is a straggler: CPU 100%");
    EXPECT_TRUE(job.ctl.taints().all().empty());  // not while it trains
    job.lose_and_relaunch("j1-worker-0", FaultKind::pod_lost, "pod j1-worker-0 was lost");
    EXPECT_TRUE(job.ctl.taints().tainted("node-1"));
    EXPECT_EQ(job.ctl.taints().all().at("node-1").reason, "rank 1 is a straggler: CPU 100%");
    // Forgotten with its attempt: the next restart taints nothing more.
    job.lose_and_relaunch("j1-worker-2", FaultKind::pod_lost, "pod j1-worker-2 was lost");
    EXPECT_EQ(job.ctl.taints().all().size(), 1u);
  }
}

TEST(JobController, OnHangReportOnlySaysSo) {
  JobSpec reporting = spec(2, 3);
  reporting.on_hang = OnHang::report;
  Job job(reporting, 3);
  job.run();
  job.ctl.on_hung({"j1-worker-1"}, "rank 1 stopped (T)");
  EXPECT_EQ(job.ctl.state(), JobState::command);
  EXPECT_TRUE(job.ctl.taints().all().empty());
  EXPECT_EQ(job.fx.events.back().kind, "hang");
  EXPECT_EQ(job.fx.events.back().text, "job hung: rank 1 stopped (T)");
}

TEST(JobController, TheTimelineInMemoryIsABoundedRingButEveryEventIsJournaled) {
  Job job(1, 1, 0);
  for (std::size_t i = 0; i < JobController::kMaxEvents + 5; ++i)
    job.ctl.record("pod", "event " + std::to_string(i));
  EXPECT_EQ(job.ctl.events().size(), JobController::kMaxEvents);
  EXPECT_EQ(job.ctl.events().front().text, "event 5");
  EXPECT_EQ(job.fx.events.size(), JobController::kMaxEvents + 5);
}

TEST(JobController, AJournalErrorIsSaidOnceAndTheJobGoesOn) {
  Job job(1, 1, 0);
  job.run();
  job.ctl.journal_failed("disk full");
  job.ctl.journal_failed("disk full");
  EXPECT_EQ(job.ctl.state(), JobState::command);
}

// Ray mode: the driver ended with "the Ray cluster never became ready" (a
// ready-timeout fault while in command) and no restart is left. Command has
// no ready_timeout transition: the job stayed in command with nothing running.
TEST(JobController, ARayClusterNeverReadyWithASpentBudgetFailsTheJobFromCommand) {
  JobSpec ray = spec(1, 0);
  ray.mode = JobMode::ray;
  Job job(ray, 1);
  job.run();
  job.fx.done = true;  // the driver was the last process; Ray's nodes went with it
  Fault fault{FaultKind::ready_timeout, "", "the Ray cluster did not become ready"};
  EXPECT_TRUE(job.ctl.on_user_code_ended({ExitMeaning::Kind::fault, fault}));
  EXPECT_EQ(job.ctl.state(), JobState::failed);
  EXPECT_EQ(job.ctl.failure(),
            "the Ray cluster did not become ready; the restart budget is spent (0/0 restarts "
            "used)");
  EXPECT_EQ(job.fx.outcome, 1);
  EXPECT_TRUE(job.fx.printed("Job status:  failed"));
}

// Each live state the controller can be in, reached through its own API.
void reach(Job& job, JobState state) {
  switch (state) {
    case JobState::pending:
      ASSERT_TRUE(job.ctl.start(nullptr, job.fx.pods.size()));
      break;
    case JobState::initializing:
      ASSERT_TRUE(job.ctl.start(nullptr, job.fx.pods.size()));
      job.fx.join_all();
      job.ctl.all_joined();
      break;
    case JobState::command:
      job.run();
      break;
    case JobState::debugStop:
      job.run();
      ASSERT_TRUE(job.ctl.apply(JobEvent::debug_stop));
      break;
    case JobState::debugCommand:
      job.run();
      ASSERT_TRUE(job.ctl.apply(JobEvent::debug_stop));
      ASSERT_TRUE(job.ctl.apply(JobEvent::debug_run));
      break;
    case JobState::restarting:
      job.run();
      job.ctl.on_pod_gone("j1-worker-0", {FaultKind::pod_lost, "j1-worker-0", "lost"});
      break;
    default:
      FAIL() << "not a live state";
  }
  ASSERT_EQ(job.ctl.state(), state);
}

// A failure the state has no transition for is never a silent no-op: from
// every live state, whatever event it is said with, the job ends failed with
// its reason, its processes stopped (bounded) and its outcome handed over.
TEST(JobController, EveryFailureEndsTheJobFromEveryLiveStateWhateverItsEvent) {
  for (JobState from : kAllJobStates) {
    if (is_terminal(from)) continue;
    for (JobEvent event : kAllJobEvents) {
      const std::string label =
          std::string(to_string(from)) + " + " + std::string(to_string(event));
      Job job(1, 1, 3);
      reach(job, from);
      job.fx.done = false;  // something may still run: it is stopped first
      job.ctl.fail(event, "the reason");
      EXPECT_EQ(job.ctl.state(), JobState::failed) << label;
      EXPECT_EQ(job.ctl.failure(), "the reason") << label;
      EXPECT_TRUE(job.fx.called("stop_user_code")) << label;
      ASSERT_TRUE(job.fx.last_timer(JobTimer::fail_stop)) << label;
      job.ctl.on_timer(JobTimer::fail_stop, 0);
      EXPECT_TRUE(job.fx.printed("job failed: the reason")) << label;
      EXPECT_EQ(job.fx.outcome, 1) << label;
    }
  }
}

}  // namespace
}  // namespace atl::supervisor

TEST(JobController, FaultKindsAreWhatWentWrongAndWhatAtlDid) {
  for (const char* kind : {"fault", "hang", "restart", "taint", "delete"})
    EXPECT_TRUE(atl::supervisor::is_fault_kind(kind)) << kind;
  for (const char* kind : {"state", "pod", "", "Fault", "faults"})
    EXPECT_FALSE(atl::supervisor::is_fault_kind(kind)) << kind;
}
