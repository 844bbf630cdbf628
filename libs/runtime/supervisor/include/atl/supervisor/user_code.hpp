// UserCode: the job's own processes (spmd's ranks, the driver, in ray mode
// Ray's head, one Ray node per active pod and the driver) through their
// attempts. It plans each stream's launch for the active pods (at every start:
// a recreated pod may have a new address), starts an attempt (the table of
// ranks, what to send to which pod), takes the reports of this attempt only,
// and says what a rank's end means while the job runs. Plain C++: the shell
// spawns the head's executors, sends the launches and acts on the meanings.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/node_info.hpp"
#include "atl/core/process_messages.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/core/rank_table.hpp"
#include "atl/core/ray_cluster.hpp"
#include "atl/core/restart_policy.hpp"

namespace atl::supervisor {

// Everything from scratch, or (ray mode, recover on an intact Ray cluster)
// the driver alone.
enum class LaunchScope { everything, driver_only };

// What a plan is made of, gathered by the shell from the other pieces.
struct PlanInput {
  const JobSpec* job = nullptr;
  AtlEndpoint atl;        // ATL_ADDRESS and the job id, for every process
  std::string head_host;  // the head's advertised host (Ray's head, MASTER_ADDR)
  std::string head_pod;   // where the driver and Ray's head run
  ProcessSite head_site;  // the head pod's processes' site
  struct Pod {
    NodeInfo info;
    ProcessSite site;  // a worker pod's non-rank processes (Ray nodes)
  };
  std::vector<Pod> active;  // the attempt's pods, in order
  std::int32_t restarts_used = 0;
  // Why the last attempt ended (the last counted fault's line; empty at the
  // first attempt): ATL_LAST_EXIT_REASON, for a rank that resumes from its
  // last checkpoint rather than start over.
  std::string last_exit_reason;
  std::string ray_bin = "ray";               // ray mode: the `ray` CLI
  std::string ray_python = "python3";        // ray mode: the driver's interpreter
  std::string ray_token;                     // ray mode: the job's token (empty: no auth)
  std::chrono::seconds ray_ready_wait{120};  // how long Ray's nodes and the driver wait for it
};

// An attempt's launches: the head pod's own (the driver, Ray's head) and
// each worker pod's, in stream order.
struct AttemptLaunches {
  std::vector<ProcessLaunch> on_head;
  std::map<std::string, std::vector<ProcessLaunch>> by_pod;
};

// What one of this attempt's streams ending means while the job runs (in
// command): nothing yet (others still run), the job succeeded, or a fault.
struct ExitMeaning {
  enum class Kind { nothing_yet, succeeded, fault };
  Kind kind = Kind::nothing_yet;
  Fault fault;  // for Kind::fault (its attempt is the caller's to set)
};

class UserCode {
 public:
  // Every stream's launch for `in.active`. Not placeable (spmd with a
  // placement spec that does not fit): why, and nothing changes.
  Status plan(const PlanInput& in);
  const std::map<std::int32_t, ProcessLaunch>& launches() const { return launches_; }
  // spmd: the pod of each rank (index = rank), as laid out; else empty.
  const std::vector<std::string>& rank_pods() const { return rank_pods_; }

  // Starts attempt `attempt()`: the table of ranks anew (or the driver's
  // entry alone), each launch stamped with the attempt.
  AttemptLaunches begin(LaunchScope scope);

  std::int32_t attempt() const { return attempt_; }
  void set_attempt(std::int32_t attempt) { attempt_ = attempt; }
  std::int32_t next_attempt() { return ++attempt_; }

  const RankTable& ranks() const { return ranks_; }
  // A report of this attempt's stream `key` (the stream's user-code key):
  // true when taken (a report of an earlier attempt, or a second end, is not).
  bool started(std::int32_t key, std::int32_t attempt, std::int32_t pid);
  bool ended(std::int32_t key, const ProcessExit& exit);
  // `pod` is gone: its streams of this attempt ended with it.
  void pod_lost(const std::string& pod);
  // The job ends: streams that never reported are closed with `note`.
  std::size_t end_remaining(const std::string& note) { return ranks_.end_remaining(note); }

  // Ray mode: how the driver and Ray's nodes of this attempt are.
  RayProcesses ray_processes() const;
  // Ray mode, the job parked in debug: a Ray node ended, so the rest of the
  // cluster is to be stopped. True once per attempt, when it is broken.
  bool ray_cluster_to_tear_down();

  // What the end of this attempt's stream `key` (already taken by ended())
  // means in command, for a job in `mode`.
  ExitMeaning meaning(JobMode mode, std::int32_t key, const ProcessExit& exit) const;

 private:
  Status plan_ray(const PlanInput& in);

  std::map<std::int32_t, ProcessLaunch> launches_;
  std::map<std::int32_t, std::string> pod_of_;  // stream -> the pod it runs on
  std::vector<std::string> rank_pods_;
  RankTable ranks_;
  std::map<std::string, std::vector<std::int32_t>> by_pod_;  // this attempt's streams by pod
  std::int32_t attempt_ = 1;
  bool ray_torn_down_ = false;
};

// "the driver", "rank 3": a user-code stream as a line names it.
std::string user_code_label(std::int32_t key);

// What a debug command (atlctl run/check/burn) on a stream takes of that
// stream's own launch: its environment and directory, nothing else. Never
// its scratch dir: a Ray node's temp dir, removed when the debug command
// ends, would break the live node (and the recovered driver with it).
ProcessLaunch debug_launch_from(const ProcessLaunch& own);

}  // namespace atl::supervisor
