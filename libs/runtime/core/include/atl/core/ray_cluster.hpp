// Ray mode: the command lines that make a Ray cluster of the job's pods and
// the driver's environment. Pure: the supervisor runs what these return.
//
// The head pod runs `ray start --head --block`, each worker pod
// `ray start --address=HEAD:PORT --block` (once the head answers), all with
// the job's spec as their resources and bound to the pod's own address; the
// entrypoint runs on the head as the Ray driver, after Ray's own API says
// every node is alive.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "atl/core/env.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/rank_layout.hpp"

namespace atl {

// The share of a node's memory Ray's object store gets (seed 002) unless the
// job's env sets RAY_OBJECT_STORE_MEMORY.
inline constexpr double kObjectStoreShare = 0.30;

struct RayPod {
  std::string pod;
  std::string address;
};

// `ray start` flags for the job's node spec: --num-cpus, --num-gpus, --memory
// and --object-store-memory for the fields the spec states.
std::vector<std::string> ray_resource_flags(const JobSpec& job);

// Each Ray node's own dir (its sessions, sockets, logs in Ray's temp dir
// kRaysOwnDir below it): pods sharing a filesystem (tests, several pods on
// one machine) never share one, and a job's are told apart. Short: socket
// paths inside must stay under 108 bytes. 0700, the job user's (Ray opens
// its own temp dir to everyone). `node` is "h" for the head, "w<k>" for
// worker k.
std::string ray_temp_dir(const std::string& job_id, const std::string& node,
                         int ray_port = JobSpec{}.ray_port);
// Ray's --temp-dir, below the node's own dir.
inline constexpr const char* kRaysOwnDir = "/r";

// Shell text run before a Ray node starts: `dir` made (or kept) 0700 and
// this user's own, umask 077; exit 3 with one line when it belongs to
// another user or is a symlink. Ends in "; ".
std::string ray_private_dir(const std::string& dir);

std::string ray_head_command(const JobSpec& job, const std::string& ray_bin,
                             const std::string& host);

// Waits (bounded by `wait`) until the head's node is alive in its GCS (asked
// with `python`, the image's Python with Ray; where that cannot ask, until
// the GCS answers), then joins it.
std::string ray_worker_command(const JobSpec& job, const std::string& ray_bin,
                               const std::string& python, const std::string& head_host,
                               const std::string& host, std::chrono::seconds wait, int worker = 0);

// RAY_JOB_CONFIG_JSON_ENV_VAR's value: {"runtime_env": {...}} with the job's
// env_vars, working_dir and the keys only Ray applies.
std::string ray_job_config_json(const JobSpec& job);

// The driver's environment: the job's env (runtime_env wins), ATL_*,
// RAY_ADDRESS and the job config.
// `head` is the head pod's site; its master_addr is the head's address.
EnvMap ray_driver_env(const JobSpec& job, const AtlEndpoint& atl, const ProcessSite& head);

// The driver's command: `python` checks with Ray's API that the head and
// every worker are alive, saying every `progress_every` which are not yet,
// for up to `wait` (then naming them and exiting 3); then the entrypoint
// runs in its place.
std::string ray_driver_command(const JobSpec& job, const std::string& python,
                               const std::string& head_host, const std::vector<RayPod>& workers,
                               std::chrono::seconds wait,
                               std::chrono::seconds progress_every = std::chrono::seconds(10));

// The address a Ray node is started on for a pod at `host`: `host` itself,
// except the loopback name Ray replaces (127.0.0.1, localhost, ::1 become
// the machine's own address: reachable from outside, and not the one atl
// knows the pod by). A one-host job's Ray head takes 127.0.1.1 instead; its
// local pods have 127.0.0.2, .3, ... (headnode --local-workers).
std::string ray_node_host(const std::string& host);

// Ray tells its nodes apart by address: a cluster whose nodes would share
// one (two pods advertising the same address, a pod at the head's) can never
// become ready. The error names them and what to do, at the start, instead
// of a readiness timeout later. `head_host` as ray_node_host gives it.
Status ray_addresses_distinct(const std::string& head_host, const std::vector<RayPod>& workers);

// Exit status of the driver command when the cluster never became ready.
inline constexpr int kRayNotReadyExit = 3;

// `atlctl stop` in ray mode stops the driver only: the Ray cluster stays up
// for debugging (`atlctl run` on its pods). What `atlctl recover` then does,
// from how the driver and the Ray nodes (head and workers) are.
enum class RayRecovery {
  driver_only,       // every Ray node still up: start the driver again on it
  whole_cluster,     // every Ray node gone: Ray and the driver from scratch
  driver_stopping,   // refuse: the driver has not ended yet
  cluster_stopping,  // refuse: some Ray nodes ended, the rest are being stopped
};

struct RayProcesses {
  bool driver_ended = false;
  int nodes_up = 0;     // started or starting, not ended
  int nodes_ended = 0;  // ended, or lost with their pod
};

RayRecovery ray_recovery(const RayProcesses& p);

// While the job is stopped, a Ray node that ends breaks the cluster: the rest
// is stopped, and recover starts it all again.
inline bool ray_cluster_broken(const RayProcesses& p) {
  return p.nodes_ended > 0 && p.nodes_up > 0;
}

}  // namespace atl
