// JobSpec: what a job asks for (entrypoint, mode, size, environment, timeouts),
// read from a JSON file and/or headnode flags, and validated field by field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/core/expected.hpp"
#include "atl/core/failure_detector.hpp"
#include "atl/core/placement.hpp"

namespace atl {

// Bounds every spec must keep, whether it came from JSON or from flags.
inline constexpr int kMaxWorkers = 100000;
inline constexpr int kMaxRanksPerNode = 1024;
inline constexpr std::int64_t kMaxWorldSize = 1 << 20;
inline constexpr int kMaxRestarts = 10000;

// spmd: the entrypoint once per rank; driver: once on the head, with atl's
// address; ray: a Ray cluster over the job's pods, the entrypoint its driver.
enum class JobMode { spmd, driver, ray };

std::string_view to_string(JobMode mode);
Expected<JobMode> parse_job_mode(std::string_view text);

// What a hung job (HangWatch's evidence) gets: a restart on spares, the
// culprits' nodes tainted (restart), or an event and nothing else (report).
enum class OnHang { restart, report };
std::string_view to_string(OnHang on_hang);
Expected<OnHang> parse_on_hang(std::string_view text);

// A rank persistently slower than its peers: an event and a mark (report),
// and its node tainted at the job's next restart (taint).
enum class OnStraggler { report, taint };
std::string_view to_string(OnStraggler on_straggler);
Expected<OnStraggler> parse_on_straggler(std::string_view text);
// Slurm's --signal: `signal` to every process of user code `lead` before
// atl stops it (a restart, atlctl stop, the job cancelled), so that a rank
// can checkpoint; then SIGTERM and the grace as always. 0: none.
struct StopWarning {
  int signal = 0;
  Millis lead{0};
};
// "USR1@30s", "SIGUSR2@1m", "10@5s" (a name with or without SIG, or a
// number; KILL and STOP cannot be caught and are refused).
Expected<StopWarning> parse_stop_warning(std::string_view text);
std::string to_string(const StopWarning& w);

// "4", "2.5": a factor from 0 to 100.
Expected<double> parse_hang_factor(std::string_view text);

// Container-level resources of one pod; 0 means "not stated".
struct NodeResources {
  int cpus = 0;
  int gpus = 0;
  std::int64_t memory = 0;
  std::int64_t shm = 0;
};

// spmd: each rank is one bundle, placed by the strategy (spec
// "placement": {"strategy": "SPREAD", "bundle": {"CPU": 1, "GPU": 1}}).
struct RankPlacementSpec {
  PlacementStrategy strategy = PlacementStrategy::pack;
  Resources bundle;
};

struct JobSpec {
  std::string job_id;
  JobMode mode = JobMode::spmd;
  std::string entrypoint;
  int workers = 1;
  int spare_workers = 0;  // extra pods that idle and replace a lost or tainted one
  int nproc_per_node = 1;
  // None: nproc_per_node ranks on every pod, in pod order (rank_layout.hpp).
  std::optional<RankPlacementSpec> placement;
  EnvMap env;               // the form's plain variables
  EnvMap runtime_env_vars;  // runtime_env.env_vars: override `env`
  std::string working_dir;  // runtime_env.working_dir
  // "tensorboard": the dir of the job's TensorBoard event files; the head
  // runs TensorBoard on it, served on the dashboard at /tensorboard/.
  std::string tensorboard_logdir;
  NodeResources node_spec;  // spec{cpus, gpus, memory, shm}
  Millis ready_timeout = std::chrono::seconds(300);
  int master_port = 29500;
  // Whether the spec or --master-port named it: a job whose pods are all
  // local (one host) gets a free port instead of torch's 29500, so two such
  // jobs on a host never meet at one store.
  bool master_port_given = false;
  Millis grace = std::chrono::seconds(10);
  // Fault tolerance (restart_policy.hpp): restarts a fault may cost before
  // the job fails; whether a rank exiting non-zero is such a fault too.
  int max_restarts = 10;
  bool restart_on_failure = false;
  HeartbeatOptions heartbeat;  // node <-> head liveness (failure_detector.hpp)
  // The hang watch (spmd): no rank's progress (output, explicit signals) for
  // this long makes the job suspect; 0 turns the watch off.
  Millis hang_timeout = std::chrono::minutes(5);
  OnHang on_hang = OnHang::restart;
  // Once a job made steps, ranks all idle for hang_factor x the p99 gap
  // between its progress (at least 10 s, at most hang_timeout) make it
  // suspect. 0: no learning, hang_timeout alone.
  double hang_factor = 4;
  OnStraggler on_straggler = OnStraggler::report;
  StopWarning stop_warning;
  // Ray mode: how long the nodes and the driver wait for every node to be
  // alive in Ray; past it the attempt is a ready timeout (a counted fault).
  Millis ray_ready_timeout = std::chrono::minutes(2);
  // Ray mode: the head's GCS port, and the runtime_env keys Ray applies itself
  // (pip, conda, py_modules, ...), each as its JSON text.
  int ray_port = 6379;
  bool ray_port_given = false;  // by the spec or --ray-port: kept as it is
  // Ray mode with every pod on this host: ports of the job's own, found free
  // at start, so that Ray jobs beside it never share Ray's fixed defaults
  // (client server 10001, each node's dashboard agent 52365, workers
  // 10002-19999). 0: Ray's default.
  int ray_client_port = 0;
  int ray_agent_port = 0;
  bool ray_any_worker_ports = false;  // --min/--max-worker-port 0: the OS picks
  // Ray mode: the port of Ray's dashboard on the head pod's loopback (atl's
  // dashboard serves it at /ray/, behind its login); 0: any free one.
  int ray_dashboard_port = 8265;
  std::map<std::string, std::string> ray_runtime_env;
};

inline constexpr int kDefaultMasterPort = 29500;

// Parses a JSON job spec on top of `base` (fields absent from the JSON keep the
// base's values). Unknown fields and wrong types are errors naming the field.
Expected<JobSpec> parse_job_spec_json(std::string_view json_text, JobSpec base = {});

// Checks the relations between fields; the message names the offending field.
Status validate_job_spec(const JobSpec& spec);

Status validate_job_id(std::string_view id);

// "jo-" followed by 16 random lowercase letters and digits.
std::string make_job_id(std::mt19937_64& rng);

// A pod's resources against the job's spec (seed 002: every worker is the
// same; mixed specs are not supported): each field the spec states (not 0)
// must be equal. The error names the field and both values.
Status check_node_matches_spec(const NodeResources& spec, const NodeResources& node);

// The workernode flags that make a pod offer what the job's spec states
// (--cpus, --gpus, --memory, --shm; a field the spec leaves 0 is not
// given): what headnode --local-workers starts its pods with, so that a job
// file with a spec runs on one machine as written.
std::vector<std::string> pod_flags_for_spec(const NodeResources& spec);

// Every worker pod of the job: the active ones and the spares.
inline int total_worker_pods(const JobSpec& spec) { return spec.workers + spec.spare_workers; }

// Pod names of the job, as the platform gives them.
std::string head_pod_name(std::string_view job_id);
std::string worker_pod_name(std::string_view job_id, int index);

}  // namespace atl
