#include "atl/core/placement.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <set>

using namespace atl;

namespace {

Resources res(std::map<std::string, double> amounts) {
  Resources r;
  for (const auto& [k, v] : amounts) r[k] = static_cast<std::int64_t>(v * kResourceUnit);
  return r;
}

PlacementNode node(const std::string& name, std::map<std::string, double> total,
                   std::string unavailable = "") {
  return {name, res(total), res(total), std::move(unavailable)};
}

std::vector<PlacementNode> four_nodes(double gpus = 2) {
  std::vector<PlacementNode> nodes;
  for (int i = 0; i < 4; ++i)
    nodes.push_back(node("w-" + std::to_string(i), {{"CPU", 4}, {"GPU", gpus}}));
  return nodes;
}

std::vector<Resources> gpus(int bundles, double each = 1) {
  return std::vector<Resources>(static_cast<size_t>(bundles), res({{"GPU", each}}));
}

}  // namespace

// --- resources -----------------------------------------------------------------

TEST(Resources, ParseTakesNamesAndFractionsAsRayDoes) {
  auto r = parse_resources(R"({"disk_ssd": 1, "GPU": 0.5, "node:10.0.0.1": 0.001})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->at("disk_ssd"), kResourceUnit);
  EXPECT_EQ(r->at("GPU"), kResourceUnit / 2);
  EXPECT_EQ(r->at("node:10.0.0.1"), 10);
  EXPECT_EQ(format_resources(*r), R"({"GPU": 0.5, "disk_ssd": 1, "node:10.0.0.1": 0.001})");
  EXPECT_TRUE(parse_resources("{}").ok());
}

TEST(Resources, ParseRefusesWhatIsNotAnAmountNamingIt) {
  for (const char* bad : {"", "[1]", "{\"a\": -1}", "{\"a\": \"1\"}", "{\"a b\": 1}",
                          "{\"a\": 1e16}", "{\"a\": 0.00001}", "{\"\": 1}", "{\"a\": 1", "3"}) {
    auto r = parse_resources(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
    }
  }
  EXPECT_NE(parse_resources(R"({"a": -1})").error().find("'a'"), std::string::npos);
  EXPECT_FALSE(parse_bundle(R"({"CPU": 0})").ok());
  EXPECT_FALSE(parse_bundle("{}").ok());
  EXPECT_TRUE(parse_bundle(R"({"CPU": 0, "GPU": 1})").ok());
}

TEST(Resources, FixedPointArithmeticNeverDrifts) {
  Resources total = res({{"GPU", 1}});
  Resources tenth = res({{"GPU", 0.1}});
  Resources left = total;
  for (int i = 0; i < 10; ++i) left = subtract(left, tenth);
  EXPECT_EQ(left.at("GPU"), 0);
  EXPECT_FALSE(fits(tenth, left));
  for (int i = 0; i < 10; ++i) left = add(left, tenth);
  EXPECT_EQ(left, total);
  EXPECT_EQ(first_shortfall(res({{"disk", 1}}), total), "disk");
  EXPECT_EQ(format_amount(12345), "1.2345");
  auto n = node_resources(8, 2, 1024, 64, res({{"disk", 1}}));
  EXPECT_EQ(n.at(kCpu), 8 * kResourceUnit);
  EXPECT_EQ(n.at(kMemory), 1024 * kResourceUnit);
  EXPECT_EQ(n.at("disk"), kResourceUnit);
}

// --- strategies ------------------------------------------------------------------

TEST(Placement, StrategyNamesParseInAnyCaseAndRefuseOthers) {
  EXPECT_EQ(*parse_placement_strategy("strict_spread"), PlacementStrategy::strict_spread);
  EXPECT_EQ(to_string(*parse_placement_strategy("PACK")), "PACK");
  EXPECT_FALSE(parse_placement_strategy("SPREADY").ok());
  EXPECT_FALSE(parse_placement_strategy("").ok());
}

TEST(Placement, PackFillsOneNodeBeforeTheNext) {
  // 16 one-GPU bundles over nodes of 8 GPUs: today's rank layout (node-major).
  std::vector<PlacementNode> nodes = {node("a", {{"GPU", 8}}), node("b", {{"GPU", 8}})};
  auto at = place_bundles(gpus(16), PlacementStrategy::pack, nodes);
  ASSERT_TRUE(at.ok()) << at.error();
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ((*at)[i], i / 8) << i;
}

TEST(Placement, PackSpillsOverAndPrefersNodesItUsesAlready) {
  auto nodes = four_nodes();
  nodes[0].available = res({{"CPU", 4}, {"GPU", 1}});  // one GPU taken by another group
  auto at = place_bundles(gpus(3), PlacementStrategy::pack, nodes);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<size_t>{0, 1, 1}));
}

TEST(Placement, SpreadUsesEveryNodeThenDoublesUp) {
  auto at = place_bundles(gpus(6), PlacementStrategy::spread, four_nodes());
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<size_t>{0, 1, 2, 3, 0, 1}));
}

TEST(Placement, SpreadSharesANodeRatherThanFail) {
  std::vector<PlacementNode> nodes = {node("a", {{"GPU", 4}}), node("b", {{"GPU", 4}}, "tainted")};
  auto at = place_bundles(gpus(3), PlacementStrategy::spread, nodes);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<size_t>{0, 0, 0}));
}

TEST(Placement, StrictPackPutsEverythingOnOneNodeOrSaysWhyNot) {
  auto nodes = four_nodes();
  nodes[0].available = res({{"CPU", 4}, {"GPU", 1}});
  auto at = place_bundles(gpus(2), PlacementStrategy::strict_pack, nodes);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<size_t>{1, 1}));
  auto none = place_bundles(gpus(3), PlacementStrategy::strict_pack, four_nodes());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(),
            "STRICT_PACK needs {\"GPU\": 3} on one node: w-0: GPU 2 of 2 free; w-1: GPU 2 of 2 "
            "free; w-2: GPU 2 of 2 free; w-3: GPU 2 of 2 free");
}

TEST(Placement, StrictSpreadGivesEachBundleANodeOfItsOwn) {
  auto at = place_bundles(gpus(4), PlacementStrategy::strict_spread, four_nodes());
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(std::set<size_t>(at->begin(), at->end()).size(), 4u);
  auto five = place_bundles(gpus(5), PlacementStrategy::strict_spread, four_nodes());
  ASSERT_FALSE(five.ok());
  EXPECT_EQ(five.error(), "STRICT_SPREAD needs 5 nodes of their own, but only 4 can take a bundle");
}

TEST(Placement, StrictSpreadMatchesBundlesToTheNodesThatFitThem) {
  // Greedy in order would put the small bundle on the big node and strand
  // the big one; the matching finds the placement.
  std::vector<PlacementNode> nodes = {node("big", {{"GPU", 4}}), node("small", {{"GPU", 1}})};
  std::vector<Resources> bundles = {res({{"GPU", 1}}), res({{"GPU", 4}})};
  auto at = place_bundles(bundles, PlacementStrategy::strict_spread, nodes);
  ASSERT_TRUE(at.ok()) << at.error();
  EXPECT_EQ(*at, (std::vector<size_t>{1, 0}));
}

TEST(Placement, StrictSpreadSaysWhenBundlesOutgrowTheNodesLeft) {
  // Three nodes could each take a bundle, but two bundles need the one big node.
  std::vector<PlacementNode> nodes = {node("big", {{"GPU", 4}}), node("s1", {{"GPU", 1}}),
                                      node("s2", {{"GPU", 1}})};
  std::vector<Resources> bundles = {res({{"GPU", 4}}), res({{"GPU", 4}}), res({{"GPU", 1}})};
  auto why = place_bundles(bundles, PlacementStrategy::strict_spread, nodes);
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.error(),
            "bundle 1 {\"GPU\": 4} fits none of the nodes left to it (the others hold bigger "
            "bundles of the group)");
}

TEST(Placement, StrictSpreadNamesTaintedAndFullNodes) {
  std::vector<PlacementNode> nodes = {node("a", {{"GPU", 1}}), node("b", {{"GPU", 1}}),
                                      node("c", {{"GPU", 1}}, "tainted by the platform: xid 79")};
  auto why = place_bundles(gpus(3), PlacementStrategy::strict_spread, nodes);
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.error(),
            "STRICT_SPREAD needs 3 nodes of their own, but only 2 can take a bundle: c: tainted by "
            "the platform: xid 79");
  nodes[2].unavailable.clear();
  nodes[1].available = res({{"GPU", 0}});
  why = place_bundles(gpus(3), PlacementStrategy::strict_spread, nodes);
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.error(),
            "STRICT_SPREAD needs 3 nodes of their own, but only 2 can take a bundle: b: GPU 0 of 1 "
            "free");
  // Pinned bundles hold their nodes.
  why = place_bundles(gpus(3), PlacementStrategy::strict_spread, nodes, {0, std::nullopt});
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.error(),
            "STRICT_SPREAD needs 2 nodes of their own, but only 1 can take a bundle: a: holds "
            "another bundle of the group; b: GPU 0 of 1 free");
}

TEST(Placement, ABundleNoNodeCanHoldSaysWhatEachNodeLacks) {
  std::vector<PlacementNode> nodes = {node("a", {{"CPU", 2}}), node("b", {{"CPU", 2}}, "lost")};
  auto why = place_bundles({res({{"CPU", 1}, {"disk_ssd", 1}})}, PlacementStrategy::pack, nodes);
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.error(),
            "bundle 0 {\"CPU\": 1, \"disk_ssd\": 1} fits no node: a: has no disk_ssd; b: lost");
  EXPECT_EQ(place_bundles(gpus(1), PlacementStrategy::spread, {}).error(),
            "bundle 0 {\"GPU\": 1} fits no node: the job has no worker nodes now");
}

TEST(Placement, AWhyLineNamesAFewNodesAndCountsTheRest) {
  std::vector<PlacementNode> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back(node("n" + std::to_string(i), {{"CPU", 1}}));
  auto why = place_bundles(gpus(1), PlacementStrategy::pack, nodes);
  ASSERT_FALSE(why.ok());
  EXPECT_NE(why.error().find("; and 14 more nodes"), std::string::npos) << why.error();
}

// Every strategy over every small cluster shape: a placement found respects
// the strategy's rule and each node's capacity; none found means none exists
// for the strict ones (checked by brute force).
TEST(Placement, EveryStrategyIsSoundAndTheStrictOnesComplete) {
  for (auto strategy : {PlacementStrategy::pack, PlacementStrategy::spread,
                        PlacementStrategy::strict_pack, PlacementStrategy::strict_spread}) {
    for (int n_nodes = 1; n_nodes <= 3; ++n_nodes) {
      for (int cap = 1; cap <= 3; ++cap) {
        for (int n_bundles = 1; n_bundles <= 4; ++n_bundles) {
          std::vector<PlacementNode> nodes;
          for (int i = 0; i < n_nodes; ++i)
            nodes.push_back(node("n" + std::to_string(i), {{"GPU", static_cast<double>(cap + i)}}));
          auto bundles = gpus(n_bundles);
          auto at = place_bundles(bundles, strategy, nodes);
          std::string label = std::string(to_string(strategy)) +
                              " nodes=" + std::to_string(n_nodes) + " cap=" + std::to_string(cap) +
                              " bundles=" + std::to_string(n_bundles);
          int capacity = 0, biggest = 0;
          for (int i = 0; i < n_nodes; ++i) {
            capacity += cap + i;
            biggest = std::max(biggest, cap + i);
          }
          bool possible = strategy == PlacementStrategy::strict_pack     ? n_bundles <= biggest
                          : strategy == PlacementStrategy::strict_spread ? n_bundles <= n_nodes
                                                                         : n_bundles <= capacity;
          EXPECT_EQ(at.ok(), possible) << label;
          if (!at.ok()) continue;
          std::vector<int> used(static_cast<size_t>(n_nodes), 0);
          for (size_t b : *at) ++used[b];
          for (int i = 0; i < n_nodes; ++i)
            EXPECT_LE(used[static_cast<size_t>(i)], cap + i) << label;
          std::set<size_t> distinct(at->begin(), at->end());
          size_t want_distinct = distinct.size();
          if (strategy == PlacementStrategy::strict_pack) want_distinct = 1;
          if (strategy == PlacementStrategy::strict_spread) want_distinct = n_bundles;
          if (strategy == PlacementStrategy::spread)
            want_distinct = static_cast<size_t>(std::min(n_bundles, n_nodes));
          EXPECT_EQ(distinct.size(), want_distinct) << label;
        }
      }
    }
  }
}

TEST(Placement, PinnedBundlesStayAndTheStrategyCountsThem) {
  auto nodes = four_nodes();
  // STRICT_SPREAD re-placing bundle 1 after its node went: not on node 0,
  // which holds bundle 0.
  auto at = place_bundles(gpus(2), PlacementStrategy::strict_spread, nodes, {0, std::nullopt});
  ASSERT_TRUE(at.ok());
  EXPECT_EQ((*at)[0], 0u);
  EXPECT_NE((*at)[1], 0u);
  // STRICT_PACK: the rest must join the pinned one.
  nodes[2].available = res({{"GPU", 0}});
  auto packed = place_bundles(gpus(2), PlacementStrategy::strict_pack, nodes, {2, std::nullopt});
  EXPECT_FALSE(packed.ok());
  EXPECT_FALSE(place_bundles(gpus(1), PlacementStrategy::pack, nodes, {9}).ok());
}

// --- the table -------------------------------------------------------------------

TEST(PlacementGroups, ReservationIsAtomicAndTheLoserPendsSayingWhy) {
  PlacementGroups t;
  t.set_nodes({node("a", {{"GPU", 1}}), node("b", {{"GPU", 1}})});
  auto first = t.create({"", gpus(2), PlacementStrategy::strict_spread, 0}, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(t.find(*first)->state, GroupState::created);
  EXPECT_EQ(t.available_on("a").at("GPU"), 0);
  // Two drivers race for the last GPU: the second pends and nothing of it is reserved.
  auto second = t.create({"", gpus(1), PlacementStrategy::pack, 0}, 2);
  ASSERT_TRUE(second.ok());
  const PlacementGroup* g = t.find(*second);
  EXPECT_EQ(g->state, GroupState::pending);
  EXPECT_EQ(g->why, "bundle 0 {\"GPU\": 1} fits no node: a: GPU 0 of 1 free; b: GPU 0 of 1 free");
  EXPECT_EQ(g->nodes, (std::vector<std::string>{""}));
  EXPECT_EQ(t.pending_demand().size(), 1u);
  // Remove frees; the pending one is placed on the next schedule.
  ASSERT_TRUE(t.remove(*first).ok());
  EXPECT_EQ(t.available_on("a").at("GPU"), kResourceUnit);
  auto changes = t.schedule(3);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].id, *second);
  EXPECT_EQ(changes[0].state, GroupState::created);
  EXPECT_EQ(t.find(*second)->nodes, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(t.pending_demand().empty());
}

TEST(PlacementGroups, BadRequestsAreRefusedAndChangeNothing) {
  PlacementGroups t;
  t.set_nodes({node("a", {{"GPU", 1}})});
  EXPECT_FALSE(t.create({"", {}, PlacementStrategy::pack, 0}, 1).ok());
  EXPECT_FALSE(t.create({"", {Resources{}}, PlacementStrategy::pack, 0}, 1).ok());
  EXPECT_FALSE(t.create({"", {res({{"GPU", -1}})}, PlacementStrategy::pack, 0}, 1).ok());
  ASSERT_TRUE(t.create({"train", gpus(1), PlacementStrategy::pack, 0}, 1).ok());
  auto twice = t.create({"train", gpus(1), PlacementStrategy::pack, 0}, 1);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(), "a placement group named 'train' exists already");
  EXPECT_EQ(t.groups().size(), 1u);
  EXPECT_FALSE(t.remove(99).ok());
  ASSERT_TRUE(t.remove(t.find("train")->id).ok());
  EXPECT_FALSE(t.remove(1).ok());       // removed already
  EXPECT_EQ(t.find("train"), nullptr);  // the name is free again
  EXPECT_TRUE(t.create({"train", gpus(1), PlacementStrategy::pack, 0}, 2).ok());
}

TEST(PlacementGroups, APendingGroupFailsAtItsDeadline) {
  PlacementGroups t;
  t.set_nodes({node("a", {{"GPU", 1}})});
  auto id = t.create({"", gpus(2), PlacementStrategy::strict_pack, 100}, 0);
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(t.schedule(99).empty());
  auto changes = t.schedule(100);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].state, GroupState::failed);
  EXPECT_EQ(t.find(*id)->why.rfind("not placed by its deadline: STRICT_PACK needs", 0), 0u)
      << t.find(*id)->why;
  EXPECT_TRUE(t.schedule(200).empty());  // failed stays failed
}

// A driver that makes a group per call (a num_cpus=1 task each) made the
// head keep every group it ever saw: 4,800 after 4,200 calls, and each
// status listing all of them (25 ms a call). Ended groups are kept up to a
// bound, the newest; live ones always.
TEST(PlacementGroups, EndedGroupsAreForgottenPastTheBoundTheNewestKept) {
  PlacementGroups t;
  t.set_nodes({node("a", {{"GPU", 1}})});
  auto keep = t.create({"held", gpus(1), PlacementStrategy::pack, 0}, 0);  // live throughout
  ASSERT_TRUE(keep.ok());
  t.set_nodes({node("a", {{"GPU", 2}})});
  const size_t made = PlacementGroups::kEndedKept + 500;
  std::int64_t first = 0, last = 0;
  for (size_t i = 0; i < made; ++i) {
    auto id = t.create({"", gpus(1), PlacementStrategy::pack, 0}, 0);
    ASSERT_TRUE(id.ok());
    ASSERT_EQ(t.find(*id)->state, GroupState::created);
    ASSERT_TRUE(t.remove(*id).ok());
    if (i == 0) first = *id;
    last = *id;
  }
  EXPECT_EQ(t.groups().size(), PlacementGroups::kEndedKept + 1);
  EXPECT_EQ(t.find(first), nullptr);                        // the oldest: forgotten
  EXPECT_EQ(t.find(last)->state, GroupState::removed);      // the newest: kept
  EXPECT_EQ(t.find(*keep)->state, GroupState::created);     // live: kept
  EXPECT_EQ(t.available_on("a").at("GPU"), kResourceUnit);  // one held
  // Failed ones are ended ones too.
  for (size_t i = 0; i < PlacementGroups::kEndedKept; ++i)
    ASSERT_TRUE(t.create({"", gpus(3), PlacementStrategy::strict_pack, 10}, 0).ok());
  EXPECT_EQ(t.schedule(10).size(), PlacementGroups::kEndedKept);
  EXPECT_EQ(t.groups().size(), PlacementGroups::kEndedKept + 1);
  EXPECT_EQ(t.find(last), nullptr);
}

TEST(PlacementGroups, ALostNodesBundlesArePlacedAgainFirst) {
  PlacementGroups t;
  t.set_nodes({node("a", {{"GPU", 1}}), node("b", {{"GPU", 1}}), node("c", {{"GPU", 1}})});
  auto spread = t.create({"", gpus(2), PlacementStrategy::strict_spread, 0}, 1);
  ASSERT_EQ(t.find(*spread)->nodes, (std::vector<std::string>{"a", "b"}));
  // Node b is lost; an older-waiting group and the rescheduled one want c.
  auto waiting = t.create({"", gpus(2), PlacementStrategy::strict_pack, 0}, 2);
  ASSERT_EQ(t.find(*waiting)->state, GroupState::pending);
  auto lost = t.lose_node("b");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].state, GroupState::rescheduling);
  EXPECT_EQ(t.find(*spread)->nodes, (std::vector<std::string>{"a", ""}));
  t.set_nodes({node("a", {{"GPU", 1}}), node("c", {{"GPU", 1}})});
  auto placed = t.schedule(3);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].id, *spread);
  EXPECT_EQ(t.find(*spread)->nodes, (std::vector<std::string>{"a", "c"}));  // a kept, b -> c
  EXPECT_EQ(t.find(*waiting)->state, GroupState::pending);
}

TEST(PlacementGroups, ATaintedNodeTakesNoNewBundleButKeepsItsOwn) {
  PlacementGroups t;
  t.set_nodes({node("a", {{"GPU", 2}})});
  auto first = t.create({"", gpus(1), PlacementStrategy::pack, 0}, 1);
  t.set_nodes({node("a", {{"GPU", 2}}, "tainted by the user")});
  EXPECT_EQ(t.find(*first)->state, GroupState::created);
  auto second = t.create({"", gpus(1), PlacementStrategy::pack, 0}, 2);
  EXPECT_EQ(t.find(*second)->why, "bundle 0 {\"GPU\": 1} fits no node: a: tainted by the user");
}

// The reservation table is kept as groups change, not recomputed: after any
// sequence of creates, removes, node losses, node changes and schedules it
// equals the sum of the live groups' placed bundles, and each node's free
// resources are its total minus that.
TEST(PlacementGroups, KeptReservationsEqualARecountAfterAnyChanges) {
  std::mt19937 rng(1130);
  const PlacementStrategy strategies[] = {PlacementStrategy::pack, PlacementStrategy::spread,
                                          PlacementStrategy::strict_pack,
                                          PlacementStrategy::strict_spread};
  for (int round = 0; round < 30; ++round) {
    PlacementGroups pg;
    std::vector<PlacementNode> nodes;
    auto reset_nodes = [&] {
      nodes.clear();
      for (int i = 0; i < 6; ++i) {
        if (rng() % 5 == 0) continue;  // lost or not joined yet
        nodes.push_back(node("w-" + std::to_string(i),
                             {{"CPU", double(2 + rng() % 4)}, {"GPU", double(rng() % 3)}},
                             rng() % 8 == 0 ? "tainted" : ""));
      }
      pg.set_nodes(nodes);
    };
    reset_nodes();
    std::int64_t now = 0;
    for (int step = 0; step < 300; ++step) {
      now += 10;
      switch (rng() % 6) {
        case 0:
        case 1: {
          GroupSpec spec;
          int bundles = 1 + static_cast<int>(rng() % 4);
          for (int b = 0; b < bundles; ++b)
            spec.bundles.push_back(res({{"CPU", double(rng() % 3)}, {"GPU", double(rng() % 2)}}));
          spec.strategy = strategies[rng() % 4];
          if (rng() % 3 == 0) spec.deadline_ms = now + 50;
          (void)pg.create(std::move(spec), now);  // some ask for nothing: refused
          break;
        }
        case 2:
          if (!pg.groups().empty()) {
            auto it = pg.groups().begin();
            std::advance(it, rng() % pg.groups().size());
            (void)pg.remove(it->first);  // some are removed already: refused
          }
          break;
        case 3:
          pg.lose_node("w-" + std::to_string(rng() % 6));
          reset_nodes();
          break;
        case 4:
          reset_nodes();
          break;
        default:
          pg.schedule(now);
      }
      std::map<std::string, Resources> recount;
      for (const auto& [id, g] : pg.groups()) {
        bool live = g.state == GroupState::pending || g.state == GroupState::created ||
                    g.state == GroupState::rescheduling;
        for (size_t i = 0; i < g.nodes.size(); ++i) {
          if (g.nodes[i].empty()) continue;
          ASSERT_TRUE(live) << "a group no longer live holds a node";
          recount[g.nodes[i]] = add(recount[g.nodes[i]], g.spec.bundles[i]);
        }
      }
      for (auto& [n, r] : recount)
        for (auto it = r.begin(); it != r.end();)
          it = it->second == 0 ? r.erase(it) : std::next(it);
      for (auto it = recount.begin(); it != recount.end();)
        it = it->second.empty() ? recount.erase(it) : std::next(it);
      ASSERT_EQ(pg.reservations(), recount) << "round " << round << " step " << step;
      for (const auto& n : nodes)
        ASSERT_EQ(pg.available_on(n.name), subtract(n.total, pg.reserved_on(n.name)))
            << n.name << " round " << round << " step " << step;
    }
  }
}

// A group's bundle pinned on a node that left the list (without lose_node) is
// placed again like an unpinned one, and its old node's share is given back.
TEST(PlacementGroups, ABundleOnANodeGoneFromTheListIsPlacedAgain) {
  PlacementGroups pg;
  pg.set_nodes({node("w-0", {{"CPU", 4}}), node("w-1", {{"CPU", 4}})});
  auto id =
      pg.create({"", {res({{"CPU", 2}}), res({{"CPU", 2}})}, PlacementStrategy::spread, 0}, 0);
  ASSERT_TRUE(id.ok());
  ASSERT_EQ(pg.find(*id)->nodes, (std::vector<std::string>{"w-0", "w-1"}));
  pg.lose_node("w-1");
  pg.set_nodes({node("w-1", {{"CPU", 4}}), node("w-2", {{"CPU", 4}})});  // w-0 gone too
  auto changes = pg.schedule(10);
  ASSERT_EQ(pg.find(*id)->state, GroupState::created);
  for (const auto& n : pg.find(*id)->nodes) EXPECT_TRUE(n == "w-1" || n == "w-2") << n;
  auto reserved = pg.reservations();
  EXPECT_EQ(reserved.count("w-0"), 0u);
  std::int64_t cpus = 0;
  for (const auto& [n, r] : reserved) cpus += r.at("CPU");
  EXPECT_EQ(cpus, res({{"CPU", 4}}).at("CPU"));
}
