// Where SPMD ranks go and what environment each one sees: ranks are packed in
// node order (node 0 gets ranks 0..k-1), GPUs split evenly among a node's ranks.
#pragma once

#include <string>
#include <vector>

#include "atl/core/env.hpp"
#include "atl/core/expected.hpp"
#include "atl/core/job_spec.hpp"

namespace atl {

struct NodeSlot {
  std::string pod;        // pod name, for messages
  std::string address;    // address other nodes reach it at
  std::string interface;  // network interface of that address (for NCCL/Gloo)
  int gpus = 0;
};

struct RankPlacement {
  int rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  int local_world_size = 0;
  std::vector<int> gpus;  // device indices on its node
};

// Ranks = nodes x nproc_per_node. A node whose GPUs do not split evenly among
// its ranks is an error naming the pod.
Expected<std::vector<RankPlacement>> layout_ranks(const std::vector<NodeSlot>& nodes,
                                                  int nproc_per_node);

struct AtlEndpoint {
  std::string address;  // supervisor HOST:PORT (ATL_ADDRESS)
  std::string job_id;
};

// The variables atl adds to a rank's environment. User variables (job env, then
// runtime_env.env_vars) go on top, except for the rank identity (RANK,
// WORLD_SIZE, ...) and ATL_* which atl always sets.
EnvMap build_rank_env(const JobSpec& job, const std::vector<NodeSlot>& nodes,
                      const std::vector<RankPlacement>& layout, const RankPlacement& rank,
                      const AtlEndpoint& atl);

// The driver's environment in driver mode: user variables plus ATL_*.
EnvMap build_driver_env(const JobSpec& job, const AtlEndpoint& atl, const std::string& head_pod);

}  // namespace atl
