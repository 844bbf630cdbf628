#include "atl/supervisor/user_code.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

using atl::Fault;
using atl::FaultKind;
using atl::JobMode;
using atl::JobSpec;
using atl::kDriverStream;
using atl::kRayHeadStream;
using atl::NodeInfo;
using atl::ProcessExit;
using atl::StreamId;
using atl::StreamKind;
using atl::supervisor::ExitMeaning;
using atl::supervisor::LaunchScope;
using atl::supervisor::PlanInput;
using atl::supervisor::UserCode;

namespace {

JobSpec job_of(JobMode mode, int nproc = 2) {
  JobSpec job;
  job.job_id = "jo-u";
  job.mode = mode;
  job.entrypoint = "python3 train.py";
  job.nproc_per_node = nproc;
  job.working_dir = "/work";
  return job;
}

PlanInput input_for(const JobSpec& job, int pods) {
  PlanInput in;
  in.job = &job;
  in.atl = {"10.0.0.1:6000", job.job_id};
  in.head_host = "10.0.0.1";
  in.head_pod = "jo-u-head-0";
  in.head_site = {"jo-u-head-0", "eth0", "10.0.0.1", 0, pods + 1};
  in.restarts_used = 2;
  for (int i = 0; i < pods; ++i) {
    NodeInfo info;
    info.pod = "jo-u-worker-" + std::to_string(i);
    info.address = "10.0.1." + std::to_string(i);
    info.interface = "eth0";
    info.cpus = 8;
    info.gpus = 2;
    in.active.push_back({info, {info.pod, "eth0", "10.0.0.1", i + 1, pods + 1}});
  }
  return in;
}

// A plan for `pods` worker pods, and the first attempt begun.
UserCode begun(JobMode mode, int pods, atl::supervisor::AttemptLaunches* launches = nullptr) {
  JobSpec job = job_of(mode);
  UserCode code;
  EXPECT_TRUE(code.plan(input_for(job, pods)).ok());
  auto begun = code.begin(LaunchScope::everything);
  if (launches) *launches = std::move(begun);
  return code;
}

bool has_env(const atl::ProcessLaunch& l, const std::string& kv) {
  return std::find(l.env.begin(), l.env.end(), kv) != l.env.end();
}

ProcessExit exit_of(std::int32_t key, std::int32_t attempt, int code = 0, int signal = 0,
                    std::string error = "") {
  ProcessExit e;
  e.stream = key == kDriverStream    ? StreamId::driver()
             : key == kRayHeadStream ? StreamId::ray_head()
                                     : StreamId::of_rank(key);
  e.attempt = attempt;
  e.pod = key < 0 ? "jo-u-head-0" : "jo-u-worker-" + std::to_string(key / 2);
  e.code = code;
  e.signal = signal;
  e.error = std::move(error);
  return e;
}

}  // namespace

TEST(UserCode, SpmdPlansEveryRankOnItsPodWithItsIdentityAndTheRestartCount) {
  JobSpec job = job_of(JobMode::spmd);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 2)).ok());
  ASSERT_EQ(code.launches().size(), 4u);
  EXPECT_EQ(code.rank_pods(), (std::vector<std::string>{"jo-u-worker-0", "jo-u-worker-0",
                                                        "jo-u-worker-1", "jo-u-worker-1"}));
  const auto& r3 = code.launches().at(3);
  EXPECT_EQ(r3.stream, StreamId::of_rank(3));
  EXPECT_EQ(r3.command, "python3 train.py");
  EXPECT_EQ(r3.working_dir, "/work");
  EXPECT_TRUE(has_env(r3, "RANK=3"));
  EXPECT_TRUE(has_env(r3, "WORLD_SIZE=4"));
  EXPECT_TRUE(has_env(r3, "ATL_RESTART_COUNT=2"));
}

TEST(UserCode, ARestartedAttemptTellsEveryProcessWhyTheLastOneEnded) {
  for (JobMode mode : {JobMode::spmd, JobMode::driver}) {
    JobSpec job = job_of(mode);
    PlanInput first = input_for(job, 2);
    UserCode code;
    ASSERT_TRUE(code.plan(first).ok());
    for (const auto& [key, launch] : code.launches())
      for (const auto& e : launch.env) EXPECT_NE(e.rfind("ATL_LAST_EXIT_REASON=", 0), 0u) << e;
    PlanInput again = first;
    again.last_exit_reason = "job hung: rank 1 in train_step (ddp.py)\nwhile...";
    ASSERT_TRUE(code.plan(again).ok());
    for (const auto& [key, launch] : code.launches())
      EXPECT_TRUE(
          has_env(launch, "ATL_LAST_EXIT_REASON=job hung: rank 1 in train_step (ddp.py) while..."))
          << key;
  }
}

TEST(UserCode, SpmdRanksAskForTheFlightRecorderUnlessTheJobSaysNo) {
  JobSpec job = job_of(JobMode::spmd);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 2)).ok());
  for (const auto& [key, launch] : code.launches())
    EXPECT_TRUE(has_env(launch, "ATL_FLIGHT_RECORDER=1")) << key;
  job.env["ATL_FLIGHT_RECORDER"] = "0";
  ASSERT_TRUE(code.plan(input_for(job, 2)).ok());
  for (const auto& [key, launch] : code.launches())
    EXPECT_TRUE(has_env(launch, "ATL_FLIGHT_RECORDER=0")) << key;
  // Ray's nodes and drivers are no ranks of a process group: never.
  for (JobMode mode : {JobMode::ray, JobMode::driver}) {
    UserCode other;
    ASSERT_TRUE(other.plan(input_for(job_of(mode), 2)).ok());
    for (const auto& [key, launch] : other.launches())
      for (const auto& e : launch.env) EXPECT_NE(e.rfind("ATL_FLIGHT_RECORDER=", 0), 0u) << e;
  }
}

TEST(UserCode, UserCodeCarriesItsStopWarning) {
  for (JobMode mode : {JobMode::spmd, JobMode::driver}) {
    JobSpec job = job_of(mode);
    job.stop_warning = {SIGUSR1, std::chrono::seconds(30)};
    UserCode code;
    ASSERT_TRUE(code.plan(input_for(job, 2)).ok());
    for (const auto& [key, launch] : code.launches()) {
      EXPECT_EQ(launch.warn_signal, SIGUSR1) << key;
      EXPECT_EQ(launch.warn_ms, 30000) << key;
    }
  }
  UserCode none;
  ASSERT_TRUE(none.plan(input_for(job_of(JobMode::spmd), 2)).ok());
  for (const auto& [key, launch] : none.launches()) EXPECT_EQ(launch.warn_signal, 0) << key;
}

TEST(UserCode, AnAttemptStampsItsLaunchesAndSendsEachPodItsOwn) {
  JobSpec job = job_of(JobMode::spmd);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 2)).ok());
  code.set_attempt(3);
  auto launches = code.begin(LaunchScope::everything);
  EXPECT_TRUE(launches.on_head.empty());
  ASSERT_EQ(launches.by_pod.size(), 2u);
  ASSERT_EQ(launches.by_pod.at("jo-u-worker-1").size(), 2u);
  EXPECT_EQ(launches.by_pod.at("jo-u-worker-1")[0].stream, StreamId::of_rank(2));
  EXPECT_EQ(launches.by_pod.at("jo-u-worker-1")[0].attempt, 3);
  EXPECT_EQ(code.ranks().size(), 4u);
  EXPECT_EQ(code.ranks().starting_count(), 4u);
}

TEST(UserCode, OnlyThisAttemptsReportsCountAndEachEndOnce) {
  JobSpec job = job_of(JobMode::spmd);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 1)).ok());
  code.begin(LaunchScope::everything);  // attempt 1
  code.next_attempt();
  code.begin(LaunchScope::everything);    // attempt 2
  EXPECT_FALSE(code.started(0, 1, 100));  // a late report of attempt 1
  EXPECT_TRUE(code.started(0, 2, 200));
  EXPECT_FALSE(code.started(7, 2, 1));  // no such rank
  EXPECT_FALSE(code.ended(0, exit_of(0, 1)));
  EXPECT_TRUE(code.ended(0, exit_of(0, 2)));
  EXPECT_FALSE(code.ended(0, exit_of(0, 2)));  // a second end
  EXPECT_FALSE(code.ranks().all_done());
}

TEST(UserCode, SpmdSucceedsWhenTheLastRankEndsWellAndFailsOnTheFirstThatDoesNot) {
  JobSpec job = job_of(JobMode::spmd);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 1)).ok());
  code.begin(LaunchScope::everything);
  ASSERT_TRUE(code.ended(0, exit_of(0, 1)));
  EXPECT_EQ(code.meaning(JobMode::spmd, 0, exit_of(0, 1)).kind, ExitMeaning::Kind::nothing_yet);
  ASSERT_TRUE(code.ended(1, exit_of(1, 1)));
  EXPECT_EQ(code.meaning(JobMode::spmd, 1, exit_of(1, 1)).kind, ExitMeaning::Kind::succeeded);

  auto failed = code.meaning(JobMode::spmd, 1, exit_of(1, 1, 3));
  ASSERT_EQ(failed.kind, ExitMeaning::Kind::fault);
  EXPECT_EQ(failed.fault.kind, FaultKind::rank_failed);
  EXPECT_EQ(failed.fault.pod, "jo-u-worker-0");
  EXPECT_EQ(failed.fault.detail, "rank 1 on pod jo-u-worker-0 ended with exit code 3");
  auto killed = code.meaning(JobMode::spmd, 1, exit_of(1, 1, 0, 9));
  EXPECT_EQ(killed.fault.detail, "rank 1 on pod jo-u-worker-0 was killed by signal 9 (SIGKILL)");
  auto unstarted = code.meaning(JobMode::spmd, 0, exit_of(0, 1, 0, 0, "no such file"));
  EXPECT_EQ(unstarted.fault.detail, "rank 0 on pod jo-u-worker-0 could not start: no such file");
  // The rank's own word (its TORCHELASTIC_ERROR_FILE's first line) ends the detail.
  auto said = exit_of(1, 1, 1);
  said.reason = "RuntimeError: CUDA out of memory";
  EXPECT_EQ(code.meaning(JobMode::spmd, 1, said).fault.detail,
            "rank 1 on pod jo-u-worker-0 ended with exit code 1: RuntimeError: CUDA out of memory");
}

TEST(UserCode, APlacementThatDoesNotFitChangesNothing) {
  JobSpec job = job_of(JobMode::spmd, 1);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 2)).ok());
  atl::RankPlacementSpec spread;
  spread.bundle = atl::Resources{{"GPU", 8 * 10000}};  // eight GPUs a rank: no pod has them
  job.placement = spread;
  auto refused = code.plan(input_for(job, 2));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().rfind("cannot place ranks: ", 0), 0u) << refused.error();
  EXPECT_EQ(code.launches().size(), 2u);  // the earlier plan stands
}

TEST(UserCode, ALostPodEndsItsRanksOnly) {
  UserCode code = begun(JobMode::spmd, 2);
  code.pod_lost("jo-u-worker-1");
  EXPECT_EQ(code.ranks().done_count(), 2u);
  EXPECT_TRUE(code.ranks().find(2)->second.done);
  EXPECT_FALSE(code.ranks().find(0)->second.done);
  code.pod_lost("jo-u-worker-9");  // no ranks there
  EXPECT_EQ(code.ranks().done_count(), 2u);
  EXPECT_EQ(code.end_remaining("abandoned"), 2u);
  EXPECT_TRUE(code.ranks().all_done());
}

TEST(UserCode, DriverModeRunsOneDriverOnTheHeadPod) {
  JobSpec job = job_of(JobMode::driver);
  UserCode code;
  ASSERT_TRUE(code.plan(input_for(job, 0)).ok());
  ASSERT_EQ(code.launches().size(), 1u);
  EXPECT_TRUE(code.rank_pods().empty());
  auto launches = code.begin(LaunchScope::everything);
  ASSERT_EQ(launches.on_head.size(), 1u);
  EXPECT_EQ(launches.on_head[0].stream.kind, StreamKind::driver);
  EXPECT_TRUE(has_env(launches.on_head[0], "ATL_RESTART_COUNT=2"));
  EXPECT_EQ(code.ranks().find(kDriverStream)->second.pod, "jo-u-head-0");
  ASSERT_TRUE(code.ended(kDriverStream, exit_of(kDriverStream, 1, 1)));
  auto m = code.meaning(JobMode::driver, kDriverStream, exit_of(kDriverStream, 1, 1));
  EXPECT_EQ(m.fault.detail, "the driver on pod jo-u-head-0 ended with exit code 1");
}

TEST(UserCode, RayModeStartsHeadNodesAndDriverAndTheDriverDecides) {
  atl::supervisor::AttemptLaunches launches;
  UserCode code = begun(JobMode::ray, 2, &launches);
  ASSERT_EQ(launches.on_head.size(), 2u);  // the driver and Ray's head
  ASSERT_EQ(launches.by_pod.size(), 2u);
  EXPECT_EQ(launches.by_pod.at("jo-u-worker-1")[0].stream, StreamId::of_rank(1));
  EXPECT_NE(launches.by_pod.at("jo-u-worker-1")[0].command.find("--address"), std::string::npos);
  EXPECT_EQ(code.meaning(JobMode::ray, kDriverStream, exit_of(kDriverStream, 1)).kind,
            ExitMeaning::Kind::succeeded);  // Ray's nodes still run: they are stopped
  auto not_ready =
      code.meaning(JobMode::ray, kDriverStream, exit_of(kDriverStream, 1, atl::kRayNotReadyExit));
  EXPECT_EQ(not_ready.fault.kind, FaultKind::ready_timeout);
  // The readiness wait's error file names the pods: the fault says them.
  ProcessExit named = exit_of(kDriverStream, 1, atl::kRayNotReadyExit);
  named.reason = "Ray cluster not ready after 10s: not alive in Ray: jo-u-worker-1";
  EXPECT_EQ(code.meaning(JobMode::ray, kDriverStream, named).fault.detail,
            "Ray cluster not ready after 10s: not alive in Ray: jo-u-worker-1");
  auto driver = code.meaning(JobMode::ray, kDriverStream, exit_of(kDriverStream, 1, 1));
  EXPECT_EQ(driver.fault.kind, FaultKind::rank_failed);
  EXPECT_EQ(driver.fault.detail, "the Ray driver ended with exit code 1");
  auto node = code.meaning(JobMode::ray, 1, exit_of(1, 1, 0, 9));
  EXPECT_EQ(node.fault.kind, FaultKind::pod_lost);
  EXPECT_EQ(node.fault.detail, "Ray on pod jo-u-worker-0 was killed by signal 9 (SIGKILL)");
  auto head = code.meaning(JobMode::ray, kRayHeadStream, exit_of(kRayHeadStream, 1, 1));
  EXPECT_EQ(head.fault.detail, "Ray's head on pod jo-u-head-0 ended with exit code 1");
}

TEST(UserCode, RayTearsDownOnceAnAttemptWhenANodeEndsAndRecoverCanRestartTheDriverAlone) {
  UserCode code = begun(JobMode::ray, 2);
  EXPECT_FALSE(code.ray_cluster_to_tear_down());  // all up
  ASSERT_TRUE(code.ended(kDriverStream, exit_of(kDriverStream, 1)));
  auto p = code.ray_processes();
  EXPECT_TRUE(p.driver_ended);
  EXPECT_EQ(p.nodes_up, 3);
  // Parked in debugStop with Ray intact: recover starts the driver alone.
  code.next_attempt();
  auto again = code.begin(LaunchScope::driver_only);
  ASSERT_EQ(again.on_head.size(), 1u);
  EXPECT_EQ(again.on_head[0].stream.kind, StreamKind::driver);
  EXPECT_EQ(again.on_head[0].attempt, 2);
  EXPECT_TRUE(again.by_pod.empty());
  EXPECT_FALSE(code.ray_processes().driver_ended);
  // A Ray node ends while parked: the rest is torn down, once.
  code.pod_lost("jo-u-worker-1");
  EXPECT_TRUE(code.ray_cluster_to_tear_down());
  EXPECT_FALSE(code.ray_cluster_to_tear_down());
}

// Seed 002: every container of a ray job knows the job's pod count and its
// own index (the head 0, the workers 1..N); its Ray processes and the driver.
TEST(UserCode, RayProcessesKnowThePodCountAndTheirPodsIndex) {
  atl::supervisor::AttemptLaunches launches;
  UserCode code = begun(JobMode::ray, 2, &launches);
  const auto& all = code.launches();
  EXPECT_TRUE(has_env(all.at(0), "WORLD_SIZE=3")) << all.at(0).env.size();
  EXPECT_TRUE(has_env(all.at(0), "RANK=1"));
  EXPECT_TRUE(has_env(all.at(1), "RANK=2"));
  EXPECT_TRUE(has_env(all.at(kRayHeadStream), "RANK=0"));
  EXPECT_TRUE(has_env(all.at(kDriverStream), "RANK=0"));
  EXPECT_TRUE(has_env(all.at(kDriverStream), "WORLD_SIZE=3"));
}

// A debug command on a Ray node takes its environment and directory, never
// its scratch dir (removing it when the command ends broke the live node).
TEST(UserCode, ADebugCommandTakesTheStreamsEnvAndDirectoryButNeverItsScratchDir) {
  UserCode code = begun(JobMode::ray, 2);
  const atl::ProcessLaunch& node = code.launches().at(1);
  ASSERT_FALSE(node.scratch_dir.empty());
  atl::ProcessLaunch debug = atl::supervisor::debug_launch_from(node);
  EXPECT_TRUE(debug.scratch_dir.empty());
  EXPECT_TRUE(debug.command.empty());
  EXPECT_FALSE(debug.control);
  EXPECT_EQ(debug.env, node.env);
  EXPECT_EQ(debug.working_dir, node.working_dir);
  EXPECT_EQ(debug.stream, node.stream);
}

// Every Ray process of the job authenticates with the job's own token; a
// job's env cannot turn it off; without a token nothing is set.
TEST(UserCode, EveryRayProcessGetsTheJobsRayToken) {
  JobSpec job = job_of(JobMode::ray);
  job.env = {{"RAY_AUTH_MODE", "disabled"}};
  PlanInput in = input_for(job, 2);
  in.ray_token = "t0k3n";
  UserCode code;
  ASSERT_TRUE(code.plan(in).ok());
  for (std::int32_t key : {0, 1, kRayHeadStream, kDriverStream}) {
    EXPECT_TRUE(has_env(code.launches().at(key), "RAY_AUTH_MODE=token")) << key;
    EXPECT_TRUE(has_env(code.launches().at(key), "RAY_AUTH_TOKEN=t0k3n")) << key;
  }
  in.ray_token.clear();
  job.env.clear();
  UserCode open;
  ASSERT_TRUE(open.plan(in).ok());
  for (const auto& kv : open.launches().at(kDriverStream).env)
    EXPECT_NE(kv.rfind("RAY_AUTH", 0), 0u) << kv;
}

// A one-host ray job (the head at 127.0.0.1): Ray's head, its workers'
// address to join, the readiness check and RAY_ADDRESS all say 127.0.1.1.
TEST(UserCode, AOneHostRayJobPutsRaysHeadOnALoopbackAddressRayKeeps) {
  JobSpec job = job_of(JobMode::ray);
  PlanInput in = input_for(job, 2);
  in.head_host = "127.0.0.1";
  in.head_site.master_addr = "127.0.0.1";
  UserCode code;
  ASSERT_TRUE(code.plan(in).ok());
  EXPECT_NE(code.launches().at(kRayHeadStream).command.find("--node-ip-address 127.0.1.1"),
            std::string::npos);
  EXPECT_NE(code.launches().at(0).command.find("--address 127.0.1.1:6379"), std::string::npos);
  EXPECT_TRUE(has_env(code.launches().at(kDriverStream), "RAY_ADDRESS=127.0.1.1:6379"));
}

TEST(UserCode, ARayPlanWhosePodsShareAnAddressIsRefused) {
  JobSpec job = job_of(JobMode::ray);
  PlanInput in = input_for(job, 2);
  in.active[1].info.address = in.active[0].info.address;
  UserCode code;
  auto planned = code.plan(in);
  ASSERT_FALSE(planned.ok());
  EXPECT_NE(planned.error().find("share the address 10.0.1.0"), std::string::npos)
      << planned.error();
}
