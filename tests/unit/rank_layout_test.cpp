#include "atl/core/rank_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

std::vector<atl::NodeSlot> two_nodes(int gpus, int cpus = 4) {
  auto offers = atl::node_resources(cpus, gpus, 0, 0, {});
  return {{"jo-x-worker-0", "10.0.0.1", "eth0", gpus, offers, ""},
          {"jo-x-worker-1", "10.0.0.2", "eth1", gpus, offers, ""}};
}

atl::RankPlacementSpec placement(atl::PlacementStrategy strategy, const char* bundle) {
  return {strategy, *atl::parse_bundle(bundle)};
}

// rank -> slot, for a layout.
std::vector<size_t> slots(const std::vector<atl::RankPlacement>& layout) {
  std::vector<size_t> out;
  for (const auto& p : layout) out.push_back(p.slot);
  return out;
}

atl::JobSpec job() {
  atl::JobSpec j;
  j.job_id = "jo-x";
  j.entrypoint = "true";
  j.workers = 2;
  j.nproc_per_node = 2;
  return j;
}

}  // namespace

TEST(LayoutRanks, PacksRanksInNodeOrder) {
  auto layout = atl::layout_ranks(two_nodes(0), 2);
  ASSERT_TRUE(layout.ok());
  ASSERT_EQ(layout->size(), 4u);
  int expected_node[] = {0, 0, 1, 1};
  int expected_local[] = {0, 1, 0, 1};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ((*layout)[r].rank, r);
    EXPECT_EQ((*layout)[r].node_rank, expected_node[r]);
    EXPECT_EQ((*layout)[r].local_rank, expected_local[r]);
    EXPECT_EQ((*layout)[r].local_world_size, 2);
    EXPECT_TRUE((*layout)[r].gpus.empty());
  }
}

TEST(LayoutRanks, SplitsGpusEvenly) {
  auto layout = atl::layout_ranks(two_nodes(4), 2);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ((*layout)[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ((*layout)[1].gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ((*layout)[3].gpus, (std::vector<int>{2, 3}));
}

TEST(LayoutRanks, UnevenGpusNameThePod) {
  auto layout = atl::layout_ranks(two_nodes(3), 2);
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.error().find("jo-x-worker-0"), std::string::npos) << layout.error();
}

// Seed 002: MASTER_ADDR is the master pod's name (e.g. jo-xxxx-head-0) where
// names resolve: a pod whose name reaches it says so (NodeInfo::dns_name).
TEST(RankEnv, MasterAddrIsRankZerosPodNameWhereItResolves) {
  auto nodes = two_nodes(2);
  nodes[0].dns_name = "jo-x-worker-0";
  auto layout = *atl::layout_ranks(nodes, 2);
  for (const auto& rank : layout)
    EXPECT_EQ(atl::build_rank_env(job(), nodes, layout, rank, {"10.0.0.9:6380", "jo-x"}, 0,
                                  atl::group_count(layout))["MASTER_ADDR"],
              "jo-x-worker-0");
  nodes[0].dns_name.clear();
  nodes[1].dns_name = "jo-x-worker-1";  // not rank 0's pod: its name is not the master's
  EXPECT_EQ(atl::build_rank_env(job(), nodes, layout, layout[3], {"10.0.0.9:6380", "jo-x"}, 0,
                                atl::group_count(layout))["MASTER_ADDR"],
            "10.0.0.1");
}

TEST(RankEnv, CarriesIdentityAndRendezvous) {
  auto nodes = two_nodes(2);
  auto layout = *atl::layout_ranks(nodes, 2);
  auto env = atl::build_rank_env(job(), nodes, layout, layout[3], {"10.0.0.9:6380", "jo-x"}, 0,
                                 atl::group_count(layout));
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["NODE_RANK"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.1");  // rank 0's pod
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "eth1");
  EXPECT_EQ(env["GLOO_SOCKET_IFNAME"], "eth1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(env["ATL_ADDRESS"], "10.0.0.9:6380");
  EXPECT_EQ(env["ATL_JOB_ID"], "jo-x");
  EXPECT_EQ(env["ATL_POD_NAME"], "jo-x-worker-1");
}

// A script written for torchrun finds torchelastic's variables: the same
// identity under its names, the run's id and restarts, OMP_NUM_THREADS=1
// for ranks sharing a node (the job's own value wins), no agent store.
TEST(RankEnv, CarriesTorchrunsVariablesToo) {
  auto nodes = two_nodes(2);
  auto layout = *atl::layout_ranks(nodes, 2);
  atl::JobSpec j = job();
  j.max_restarts = 5;
  auto env = atl::build_rank_env(j, nodes, layout, layout[3], {"10.0.0.9:6380", "jo-x"}, 2,
                                 atl::group_count(layout));
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "2");
  EXPECT_EQ(env["ROLE_NAME"], "default");
  EXPECT_EQ(env["ROLE_RANK"], "3");
  EXPECT_EQ(env["ROLE_WORLD_SIZE"], "4");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "jo-x");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["ATL_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "5");
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "1");
  // One rank per node keeps every core; the job's own choice wins.
  auto single = *atl::layout_ranks(nodes, 1);
  auto one = atl::build_rank_env(j, nodes, single, single[1], {"h:1", "jo-x"}, 0,
                                 atl::group_count(single));
  EXPECT_EQ(one.count("OMP_NUM_THREADS"), 0u);
  EXPECT_EQ(one["GROUP_RANK"], "1");
  EXPECT_EQ(one["GROUP_WORLD_SIZE"], "2");
  j.env["OMP_NUM_THREADS"] = "8";
  j.env["GROUP_RANK"] = "7";  // the identity stays atl's
  auto chosen = atl::build_rank_env(j, nodes, layout, layout[0], {"h:1", "jo-x"}, 0,
                                    atl::group_count(layout));
  EXPECT_EQ(chosen["OMP_NUM_THREADS"], "8");
  EXPECT_EQ(chosen["GROUP_RANK"], "0");
}

TEST(RankEnv, GroupCountIsTheNodesThatRunRanksWhereverTheHighestComes) {
  EXPECT_EQ(atl::group_count({}), 0);
  std::vector<atl::RankPlacement> layout(3);
  layout[0].node_rank = 0;
  layout[1].node_rank = 2;  // placed: the last new node need not come last
  layout[2].node_rank = 1;
  EXPECT_EQ(atl::group_count(layout), 3);
}

TEST(RankEnv, RuntimeEnvOverridesEnvButNotTheRankIdentity) {
  auto nodes = two_nodes(0);
  auto layout = *atl::layout_ranks(nodes, 2);
  atl::JobSpec j = job();
  j.env = {{"A", "from-env"}, {"B", "only-env"}, {"RANK", "99"}, {"NCCL_SOCKET_IFNAME", "ib0"}};
  j.runtime_env_vars = {{"A", "from-runtime"}, {"ATL_JOB_ID", "spoofed"}};
  j.master_port = 29600;
  auto env = atl::build_rank_env(j, nodes, layout, layout[0], {"h:1", "jo-x"}, 0,
                                 atl::group_count(layout));
  EXPECT_EQ(env["A"], "from-runtime");
  EXPECT_EQ(env["B"], "only-env");
  EXPECT_EQ(env["RANK"], "0");
  EXPECT_EQ(env["ATL_JOB_ID"], "jo-x");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "ib0");  // a user's interface choice wins
  EXPECT_EQ(env["MASTER_PORT"], "29600");
}

TEST(DriverEnv, HasTheAddressAndUserVariables) {
  atl::JobSpec j = job();
  j.env = {{"A", "1"}};
  auto env = atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-head-0", "", ""});
  EXPECT_EQ(env["ATL_ADDRESS"], "h:7");
  EXPECT_EQ(env["ATL_POD_NAME"], "jo-x-head-0");
  EXPECT_EQ(env["A"], "1");
  EXPECT_EQ(env.count("RANK"), 0u);
  EXPECT_EQ(env.count("MASTER_ADDR"), 0u);  // no site given: nothing invented
  EXPECT_EQ(env.count("NCCL_SOCKET_IFNAME"), 0u);
}

// Seed 002's cluster-level variables for the driver: the head as master, the
// pod's interface for NCCL and Gloo; the user may override them, never ATL_*.
TEST(DriverEnv, HasTheClusterLevelVariablesUsersMayOverride) {
  atl::JobSpec j = job();
  auto env = atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-head-0", "eth0", "10.0.0.1"});
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], std::to_string(j.master_port));
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "eth0");
  EXPECT_EQ(env["GLOO_SOCKET_IFNAME"], "eth0");
  j.env = {{"NCCL_SOCKET_IFNAME", "ib0"}, {"MASTER_PORT", "1234"}, {"ATL_POD_NAME", "fake"}};
  env = atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-head-0", "eth0", "10.0.0.1"});
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "ib0");
  EXPECT_EQ(env["GLOO_SOCKET_IFNAME"], "eth0");
  EXPECT_EQ(env["MASTER_PORT"], "1234");
  EXPECT_EQ(env["ATL_POD_NAME"], "jo-x-head-0");
}

// Seed 002's WORLD_SIZE and RANK outside spmd: the job's pods and this
// pod's index (the head 0); a user may override them; a spare has none.
TEST(DriverEnv, HasThePodCountAndThePodsIndex) {
  atl::JobSpec j = job();
  auto env =
      atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-worker-1", "eth0", "10.0.0.1", 2, 3});
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["RANK"], "2");
  env = atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-head-0", "eth0", "10.0.0.1", 0, 3});
  EXPECT_EQ(env["RANK"], "0");
  env = atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-worker-3", "eth0", "10.0.0.1", -1, 3});
  EXPECT_EQ(env.count("RANK"), 0u);
  EXPECT_EQ(env.count("WORLD_SIZE"), 0u);
  j.env = {{"RANK", "7"}};
  env = atl::build_process_env(j, {"h:7", "jo-x"}, {"jo-x-worker-1", "eth0", "10.0.0.1", 2, 3});
  EXPECT_EQ(env["RANK"], "7");
}

TEST(PlaceRanks, PackOfAShareOfANodeReproducesTheDefaultLayout) {
  // Bundles of a node's resources / nproc_per_node (4 CPUs, 4 GPUs, 2 ranks).
  for (int gpus : {0, 4}) {
    auto nodes = two_nodes(gpus);
    auto want = *atl::layout_ranks(nodes, 2);
    auto got = atl::place_ranks(
        nodes, 2,
        placement(atl::PlacementStrategy::pack, gpus ? R"({"GPU": 2})" : R"({"CPU": 2})"));
    ASSERT_TRUE(got.ok()) << got.error();
    ASSERT_EQ(got->size(), want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      EXPECT_EQ((*got)[r].slot, want[r].slot) << r;
      EXPECT_EQ((*got)[r].node_rank, want[r].node_rank) << r;
      EXPECT_EQ((*got)[r].local_rank, want[r].local_rank) << r;
      EXPECT_EQ((*got)[r].local_world_size, want[r].local_world_size) << r;
      EXPECT_EQ((*got)[r].gpus, want[r].gpus) << r;
    }
  }
}

TEST(PlaceRanks, SpreadAlternatesNodesAndNumbersEachNodesRanksInTurn) {
  auto got = atl::place_ranks(two_nodes(4), 2,
                              placement(atl::PlacementStrategy::spread, R"({"CPU": 1, "GPU": 1})"));
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(slots(*got), (std::vector<size_t>{0, 1, 0, 1}));
  int local[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ((*got)[r].local_rank, local[r]) << r;
    EXPECT_EQ((*got)[r].node_rank, r % 2) << r;
    EXPECT_EQ((*got)[r].local_world_size, 2);
    EXPECT_EQ((*got)[r].gpus, (std::vector<int>{local[r]})) << r;
  }
  // The environment follows: rank 2 is worker-0's second rank on its GPU 1.
  auto nodes = two_nodes(4);
  auto env = atl::build_rank_env(job(), nodes, *got, (*got)[2], {"10.0.0.9:6380", "jo-x"}, 0,
                                 atl::group_count(*got));
  EXPECT_EQ(env["RANK"], "2");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["NODE_RANK"], "0");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(env["ATL_POD_NAME"], "jo-x-worker-0");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "eth0");
}

TEST(PlaceRanks, StrictPackPutsEveryRankOnOneNodeAndLeavesTheOtherIdle) {
  // 2 nodes x 2 ranks = 4 bundles of 1 CPU on nodes of 4 CPUs.
  auto got = atl::place_ranks(two_nodes(0, 4), 2,
                              placement(atl::PlacementStrategy::strict_pack, R"({"CPU": 1})"));
  ASSERT_TRUE(got.ok()) << got.error();
  auto s = slots(*got);
  EXPECT_EQ(std::count(s.begin(), s.end(), s[0]), 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ((*got)[r].node_rank, 0);
    EXPECT_EQ((*got)[r].local_rank, r);
    EXPECT_EQ((*got)[r].local_world_size, 4);
  }
}

TEST(PlaceRanks, WhatCannotBePlacedSaysWhy) {
  // Four ranks, one node each: two nodes are not enough.
  auto spread = atl::place_ranks(two_nodes(0), 2,
                                 placement(atl::PlacementStrategy::strict_spread, R"({"CPU": 1})"));
  ASSERT_FALSE(spread.ok());
  EXPECT_NE(spread.error().find("STRICT_SPREAD placement of 4 ranks"), std::string::npos)
      << spread.error();
  // A bundle no node offers: the why names the resource.
  auto big =
      atl::place_ranks(two_nodes(1), 1, placement(atl::PlacementStrategy::pack, R"({"GPU": 2})"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("GPU"), std::string::npos) << big.error();
  EXPECT_EQ(big.error().find('\n'), std::string::npos) << big.error();
  // More CPUs asked than all nodes have.
  auto cpus = atl::place_ranks(two_nodes(0, 2), 3,
                               placement(atl::PlacementStrategy::pack, R"({"CPU": 1})"));
  ASSERT_FALSE(cpus.ok());
  EXPECT_NE(cpus.error().find("CPU"), std::string::npos) << cpus.error();
  EXPECT_FALSE(
      atl::place_ranks(two_nodes(0), 0, placement(atl::PlacementStrategy::pack, R"({"CPU": 1})"))
          .ok());
}
