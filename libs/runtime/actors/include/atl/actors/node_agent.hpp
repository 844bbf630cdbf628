// NodeAgent: a worker pod's representative. Registers the node's resources with
// the JobSupervisor, runs its pre-flight check, hosts one Executor per rank,
// and ends the node when the supervisor ends the job or is lost.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atl/actors/messages.hpp"
#include "atl/core/unsent_output.hpp"

namespace atl {

struct NodeAgentConfig {
  NodeInfo info;
  std::string head_host;
  std::uint16_t head_port = 0;
  // Set when the node ended because the head went away (its connection
  // dropped, or it fell silent): workernode then tries to join it again.
  std::shared_ptr<std::atomic<bool>> head_lost;
  std::shared_ptr<std::atomic<bool>> joined;  // set once the head took this node
  // workernode --simulate --fake-ranks: ranks are in-process stand-ins
  // (fake_executor.hpp), not processes.
  bool fake_ranks = false;
  // This process's own log lines go to the head (logs/pod-worker-<i>.log).
  // Off for simulated pods: the forwarder is the process's, not a pod's.
  bool forward_log = true;
  // Watch the GPUs NVML shows this pod (gpu_watch.hpp). Off for simulated
  // pods: hundreds share one process and the machine's GPUs are none of theirs.
  bool watch_gpus = true;
  // What the pod's shells (the web terminal) know of their job, "NAME=value":
  // ATL_JOB_ID, ATL_ADDRESS and the credentials (ATL_TLS_DIR, or
  // ATL_INSECURE=1), so atlctl there is this job's on a host of many.
  std::vector<std::string> shell_env;
  // The pod's output the head never acknowledged before the node lost it
  // (a cut, a dead head): kept across the node's rejoins (it is the
  // workernode process's) and sent to the head once it took the node again.
  // None: such output is dropped.
  std::shared_ptr<UnsentOutput> unsent;
};

// Exit codes a workernode ends with (besides the job's 0/1).
inline constexpr int kNodeExitRejected = 2;  // the head refused this pod
inline constexpr int kNodeExitHeadLost = 3;  // the head went away (or declared this pod lost)
inline constexpr int kNodeExitDeleted = 4;   // atlctl delete: the pod is to be recreated
inline constexpr int kNodeExitSignalled = 143;

// `exit_code` receives the code the workernode process should end with.
caf::actor spawn_node_agent(caf::actor_system& sys, caf::actor supervisor, NodeAgentConfig config,
                            std::shared_ptr<std::atomic<int>> exit_code);

}  // namespace atl
