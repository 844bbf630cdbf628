// Where SPMD ranks go and what environment each one sees: by default ranks
// are packed in node order (node 0 gets ranks 0..k-1), GPUs split evenly among
// a node's ranks; with the job's `placement`, each rank is a bundle placed by
// the placement engine (placement.hpp).
#pragma once

#include <string>
#include <vector>

#include "atl/core/env.hpp"
#include "atl/core/expected.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/resources.hpp"

namespace atl {

struct NodeSlot {
  std::string pod;        // pod name, for messages
  std::string address;    // address other nodes reach it at (or by dns_name)
  std::string interface;  // network interface of that address (for NCCL/Gloo)
  int gpus = 0;
  Resources resources;   // what it offers placement (the job's `placement` only)
  std::string dns_name;  // MASTER_ADDR when it hosts rank 0 and has one (NodeInfo::dns_name)
};

struct RankPlacement {
  int rank = 0;
  size_t slot = 0;    // its node: an index into the NodeSlot list it was laid out over
  int node_rank = 0;  // its node's index among the nodes that run ranks
  int local_rank = 0;
  int local_world_size = 0;
  std::vector<int> gpus;  // device indices on its node
};

// Ranks = nodes x nproc_per_node. A node whose GPUs do not split evenly among
// its ranks is an error naming the pod.
Expected<std::vector<RankPlacement>> layout_ranks(const std::vector<NodeSlot>& nodes,
                                                  int nproc_per_node);

// Ranks = nodes x nproc_per_node, rank i being bundle i of a group placed by
// `spec` over the nodes' resources. A node's ranks get LOCAL_RANK 0.. in rank
// order and NODE_RANK in the order nodes first appear; a rank's GPUs are the
// bundle's count, in turn on its node. Not placeable: the engine's why.
Expected<std::vector<RankPlacement>> place_ranks(const std::vector<NodeSlot>& nodes,
                                                 int nproc_per_node, const RankPlacementSpec& spec);

struct AtlEndpoint {
  std::string address;  // supervisor HOST:PORT (ATL_ADDRESS)
  std::string job_id;
};

// The variables atl adds to a rank's environment. User variables (job env, then
// runtime_env.env_vars) go on top, except for the rank identity (RANK,
// WORLD_SIZE, ...) and ATL_* which atl always sets. The identity is
// torchrun's too (torchelastic's GROUP_RANK, ROLE_RANK, ...,
// TORCHELASTIC_RESTART_COUNT = `restart_count`, the restarts used so far),
// so a script written for torchrun finds what it reads; and, as torchrun,
// OMP_NUM_THREADS=1 when a node runs several ranks (a default the job's env
// may override).
// `groups`: the layout's group_count (computed once per plan, not per rank:
// a walk of 70,000 ranks for each of them stalled the supervisor).
EnvMap build_rank_env(const JobSpec& job, const std::vector<NodeSlot>& nodes,
                      const std::vector<RankPlacement>& layout, const RankPlacement& rank,
                      const AtlEndpoint& atl, int restart_count, int groups);

// How many nodes run ranks (torchelastic's GROUP_WORLD_SIZE).
int group_count(const std::vector<RankPlacement>& layout);

// Where a process that is not a rank runs (the driver, a Ray node, a debug
// command in driver mode): its pod, the interface its traffic leaves by, and
// the job's master (the head pod's address, seed 002's MASTER_ADDR).
struct ProcessSite {
  std::string pod;
  std::string interface;    // NCCL_/GLOO_SOCKET_IFNAME; empty: left unset
  std::string master_addr;  // MASTER_ADDR; empty: left unset
  // Seed 002's WORLD_SIZE and RANK for the job's containers: how many pods
  // take part (the head and the active workers) and this pod's index among
  // them (the head 0, workers 1..N). -1: left unset (a spare, say).
  int pod_rank = -1;
  int pods = 0;
};

// The environment of a process that is not a rank: the cluster-level
// variables (MASTER_ADDR, MASTER_PORT, NCCL_/GLOO_SOCKET_IFNAME, WORLD_SIZE
// and RANK as pod count and index) a user may override, the user's
// variables, then ATL_*. Visible devices are the pod's own (inherited from
// the node's environment).
EnvMap build_process_env(const JobSpec& job, const AtlEndpoint& atl, const ProcessSite& site);

}  // namespace atl
