#include "atl/core/rank_layout.hpp"

#include <algorithm>
#include <string>

namespace atl {

Expected<std::vector<RankPlacement>> layout_ranks(const std::vector<NodeSlot>& nodes,
                                                  int nproc_per_node) {
  if (nproc_per_node < 1) return make_error("nproc_per_node must be at least 1");
  std::vector<RankPlacement> out;
  out.reserve(nodes.size() * nproc_per_node);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const NodeSlot& node = nodes[n];
    if (node.gpus > 0 && node.gpus % nproc_per_node != 0) {
      return make_error("pod " + node.pod + " has " + std::to_string(node.gpus) +
                        " GPUs, which do not split evenly among " + std::to_string(nproc_per_node) +
                        " ranks");
    }
    int per_rank = node.gpus / nproc_per_node;
    for (int local = 0; local < nproc_per_node; ++local) {
      RankPlacement p;
      p.rank = static_cast<int>(n) * nproc_per_node + local;
      p.slot = n;
      p.node_rank = static_cast<int>(n);
      p.local_rank = local;
      p.local_world_size = nproc_per_node;
      for (int g = 0; g < per_rank; ++g) p.gpus.push_back(local * per_rank + g);
      out.push_back(std::move(p));
    }
  }
  return out;
}

Expected<std::vector<RankPlacement>> place_ranks(const std::vector<NodeSlot>& nodes,
                                                 int nproc_per_node,
                                                 const RankPlacementSpec& spec) {
  if (nproc_per_node < 1) return make_error("nproc_per_node must be at least 1");
  std::vector<PlacementNode> offered;
  offered.reserve(nodes.size());
  for (const auto& n : nodes) offered.push_back(PlacementNode{n.pod, n.resources, n.resources, {}});
  const std::vector<Resources> bundles(nodes.size() * static_cast<size_t>(nproc_per_node),
                                       spec.bundle);
  auto where = place_bundles(bundles, spec.strategy, offered);
  if (!where)
    return make_error(std::string(to_string(spec.strategy)) + " placement of " +
                      std::to_string(bundles.size()) + " ranks: " + where.error());
  auto gpu = spec.bundle.find(std::string(kGpu));
  const int gpus_each =
      gpu == spec.bundle.end() ? 0 : static_cast<int>(gpu->second / kResourceUnit);
  std::vector<int> node_rank(nodes.size(), -1), on_node(nodes.size(), 0);
  int next_node_rank = 0;
  std::vector<RankPlacement> out(bundles.size());
  for (size_t r = 0; r < bundles.size(); ++r) {
    size_t n = (*where)[r];
    if (node_rank[n] < 0) node_rank[n] = next_node_rank++;
    RankPlacement& p = out[r];
    p.rank = static_cast<int>(r);
    p.slot = n;
    p.node_rank = node_rank[n];
    p.local_rank = on_node[n]++;
    for (int g = 0; g < gpus_each; ++g) p.gpus.push_back(p.local_rank * gpus_each + g);
  }
  for (auto& p : out) p.local_world_size = on_node[p.slot];
  return out;
}

namespace {

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

void apply_user_env(const JobSpec& job, EnvMap& env) {
  for (const auto& [k, v] : job.env) env[k] = v;
  for (const auto& [k, v] : job.runtime_env_vars) env[k] = v;
}

void set_atl_identity(const AtlEndpoint& atl, const std::string& pod, EnvMap& env) {
  env["ATL_ADDRESS"] = atl.address;
  env["ATL_JOB_ID"] = atl.job_id;
  env["ATL_POD_NAME"] = pod;
}

}  // namespace

int group_count(const std::vector<RankPlacement>& layout) {
  int groups = 0;
  for (const auto& r : layout) groups = std::max(groups, r.node_rank + 1);
  return groups;
}

EnvMap build_rank_env(const JobSpec& job, const std::vector<NodeSlot>& nodes,
                      const std::vector<RankPlacement>& layout, const RankPlacement& rank,
                      const AtlEndpoint& atl, int restart_count, int groups) {
  const NodeSlot& node = nodes.at(rank.slot);
  const NodeSlot& master = nodes.at(layout.at(0).slot);
  EnvMap env;
  // Defaults a user may override (e.g. a different NCCL interface).
  env["MASTER_ADDR"] = master.dns_name.empty() ? master.address : master.dns_name;
  env["MASTER_PORT"] = std::to_string(job.master_port);
  env["NCCL_SOCKET_IFNAME"] = node.interface;
  env["GLOO_SOCKET_IFNAME"] = node.interface;
  env["CUDA_VISIBLE_DEVICES"] = join_ints(rank.gpus);
  env["NVIDIA_VISIBLE_DEVICES"] = join_ints(rank.gpus);
  // torchrun's default: ranks sharing a node do not each take every core.
  if (rank.local_world_size > 1) env["OMP_NUM_THREADS"] = "1";
  apply_user_env(job, env);
  // The rank's identity is atl's to say: a stray RANK in the job env must not win.
  env["WORLD_SIZE"] = std::to_string(layout.size());
  env["RANK"] = std::to_string(rank.rank);
  env["LOCAL_RANK"] = std::to_string(rank.local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(rank.local_world_size);
  env["NODE_RANK"] = std::to_string(rank.node_rank);
  // torchelastic's names for the same (one role, "default"; one group per node).
  env["GROUP_RANK"] = std::to_string(rank.node_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(groups);
  env["ROLE_NAME"] = "default";
  env["ROLE_RANK"] = std::to_string(rank.rank);
  env["ROLE_WORLD_SIZE"] = std::to_string(layout.size());
  env["TORCHELASTIC_RUN_ID"] = atl.job_id;
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(job.max_restarts);
  // No agent store: torch.distributed's env:// rendezvous makes its own at
  // MASTER_ADDR:MASTER_PORT, rank 0 serving it.
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  env["ATL_RESTART_COUNT"] = std::to_string(restart_count);
  set_atl_identity(atl, node.pod, env);
  return env;
}

EnvMap build_process_env(const JobSpec& job, const AtlEndpoint& atl, const ProcessSite& site) {
  EnvMap env;
  if (!site.master_addr.empty()) {
    env["MASTER_ADDR"] = site.master_addr;
    env["MASTER_PORT"] = std::to_string(job.master_port);
  }
  if (!site.interface.empty()) {
    env["NCCL_SOCKET_IFNAME"] = site.interface;
    env["GLOO_SOCKET_IFNAME"] = site.interface;
  }
  if (site.pod_rank >= 0 && site.pod_rank < site.pods) {
    env["WORLD_SIZE"] = std::to_string(site.pods);
    env["RANK"] = std::to_string(site.pod_rank);
  }
  apply_user_env(job, env);
  set_atl_identity(atl, site.pod, env);
  return env;
}

}  // namespace atl
