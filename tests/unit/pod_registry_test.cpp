#include "atl/supervisor/pod_registry.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

using atl::NodeInfo;
using atl::ReplyCode;
using atl::supervisor::PodStanding;
using atl::supervisor::Refusal;

namespace {

// Agents are ints here: which connection a pod joined through.
using Registry = atl::supervisor::PodRegistry<int>;

Registry three_pods() {
  return Registry("jo-x", {"jo-x-worker-0", "jo-x-worker-1", "jo-x-worker-2"});
}

NodeInfo pod(int i, const std::string& machine = "m", int gpus = 8) {
  NodeInfo info;
  info.pod = "jo-x-worker-" + std::to_string(i);
  info.address = "10.0.0." + std::to_string(i);
  info.machine = machine + std::to_string(i);
  info.gpus = gpus;
  return info;
}

const Registry::JoinRules kOpen{};

std::vector<std::string> selected(const std::variant<std::vector<std::string>, Refusal>& v) {
  if (const auto* r = std::get_if<Refusal>(&v)) ADD_FAILURE() << "refused: " << r->text;
  const auto* pods = std::get_if<std::vector<std::string>>(&v);
  return pods ? *pods : std::vector<std::string>{};
}

Refusal refusal(const std::variant<std::vector<std::string>, Refusal>& v) {
  if (const auto* r = std::get_if<Refusal>(&v)) return *r;
  ADD_FAILURE() << "selected " << std::get<std::vector<std::string>>(v).size() << " pods";
  return {};
}

}  // namespace

TEST(PodRegistry, ExpectedPodsJoinWithTheirAgentAndAreMissingUntilThen) {
  Registry r = three_pods();
  EXPECT_EQ(r.missing(), "jo-x-worker-0, jo-x-worker-1, jo-x-worker-2");
  EXPECT_EQ(r.standing("jo-x-worker-1"), PodStanding::missing);
  bool rejoined = true;
  EXPECT_FALSE(r.join(pod(1), 41, kOpen, &rejoined));
  EXPECT_FALSE(rejoined);
  ASSERT_NE(r.find("jo-x-worker-1"), nullptr);
  EXPECT_EQ(r.find("jo-x-worker-1")->agent, 41);
  EXPECT_EQ(r.info("jo-x-worker-1")->address, "10.0.0.1");
  EXPECT_EQ(r.standing("jo-x-worker-1"), PodStanding::joined);
  EXPECT_EQ(r.missing(), "jo-x-worker-0, jo-x-worker-2");
  EXPECT_FALSE(r.all_joined());
  EXPECT_FALSE(r.join(pod(0), 40, kOpen));
  EXPECT_FALSE(r.join(pod(2), 42, kOpen));
  EXPECT_TRUE(r.all_joined());
  EXPECT_EQ(r.joined_count(), 3u);
  EXPECT_EQ(r.missing(), "");
  EXPECT_EQ(r.index_of("jo-x-worker-2"), 2u);
  EXPECT_FALSE(r.index_of("jo-x-worker-3"));
}

TEST(PodRegistry, EveryRefusedJoinNamesWhyAndChangesNothing) {
  Registry r = three_pods();
  ASSERT_FALSE(r.join(pod(0), 40, kOpen));
  auto closed = r.join(pod(1), 41, Registry::JoinRules{std::string("job ended"), 0});
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->text, "job ended");
  EXPECT_FALSE(closed->retry);
  NodeInfo stranger = pod(7);
  auto unknown = r.join(stranger, 47, kOpen);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->text,
            "unknown pod 'jo-x-worker-7': job jo-x expects jo-x-worker-0 .. jo-x-worker-2");
  auto twice = r.join(pod(0), 50, kOpen);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->text, "pod jo-x-worker-0 already joined from 10.0.0.0");
  EXPECT_TRUE(twice->retry);                      // its old self is about to be declared lost
  EXPECT_EQ(r.find("jo-x-worker-0")->agent, 40);  // the first one kept
  auto small = r.join(pod(2, "m", 4), 42, Registry::JoinRules{std::nullopt, 8});
  ASSERT_TRUE(small);
  EXPECT_EQ(small->text, "pod jo-x-worker-2 has 4 GPUs; the job's spec asks for 8");
  EXPECT_EQ(r.joined_count(), 1u);
  EXPECT_EQ(r.machine_of("jo-x-worker-2"), nullptr);
  EXPECT_EQ(r.standing("jo-x-worker-1"), PodStanding::missing);
  Registry none("jo-y", {});
  EXPECT_EQ(none.join(pod(0), 1, kOpen)->text,
            "unknown pod 'jo-x-worker-0': job jo-y expects no workers");
}

TEST(PodRegistry, ALostPodIsAwaitedAsLostAndRejoinsWithANewAgent) {
  Registry r = three_pods();
  ASSERT_FALSE(r.join(pod(1), 41, kOpen));
  EXPECT_EQ(r.leave("jo-x-worker-1", true), 41);
  EXPECT_FALSE(r.leave("jo-x-worker-1", true));  // a second loss finds nothing
  EXPECT_FALSE(r.leave("jo-x-worker-0", true));  // never joined
  EXPECT_EQ(r.standing("jo-x-worker-1"), PodStanding::lost);
  EXPECT_EQ(r.standing("jo-x-worker-0"), PodStanding::missing);
  EXPECT_EQ(*r.machine_of("jo-x-worker-1"), "m1");  // still named after it left
  bool rejoined = false;
  EXPECT_FALSE(r.join(pod(1, "new"), 51, kOpen, &rejoined));
  EXPECT_TRUE(rejoined);
  EXPECT_EQ(r.find("jo-x-worker-1")->agent, 51);
  EXPECT_EQ(*r.machine_of("jo-x-worker-1"), "new1");  // recreated elsewhere
  EXPECT_EQ(r.standing("jo-x-worker-1"), PodStanding::joined);
}

TEST(PodRegistry, APodThatLeavesBeforeTheStartIsJustMissing) {
  Registry r = three_pods();
  ASSERT_FALSE(r.join(pod(2), 42, kOpen));
  EXPECT_EQ(r.leave("jo-x-worker-2", false), 42);
  EXPECT_EQ(r.standing("jo-x-worker-2"), PodStanding::missing);
  bool rejoined = true;
  EXPECT_FALSE(r.join(pod(2), 52, kOpen, &rejoined));
  EXPECT_FALSE(rejoined);
}

TEST(PodRegistry, MachinesAreEveryMachineEverJoinedSortedOnce) {
  Registry r = three_pods();
  NodeInfo a = pod(0), b = pod(1), c = pod(2);
  a.machine = "zeta";
  b.machine = "alpha";
  c.machine = "zeta";
  ASSERT_FALSE(r.join(a, 1, kOpen));
  ASSERT_FALSE(r.join(b, 2, kOpen));
  ASSERT_FALSE(r.join(c, 3, kOpen));
  r.leave("jo-x-worker-1", true);
  EXPECT_EQ(r.machines(), (std::vector<std::string>{"alpha", "zeta"}));
}

TEST(PodRegistry, AgentsAreFoundBackByAnyTest) {
  Registry r = three_pods();
  ASSERT_FALSE(r.join(pod(0), 40, kOpen));
  ASSERT_FALSE(r.join(pod(2), 42, kOpen));
  EXPECT_EQ(r.pod_of_agent([](int a) { return a == 42; }), "jo-x-worker-2");
  EXPECT_FALSE(r.pod_of_agent([](int a) { return a == 41; }));
}

TEST(PodRegistry, DeleteTakesNamedJoinedPodsInTheirOrderAndRefusesOneNamedTwice) {
  Registry r = three_pods();
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(r.join(pod(i), 40 + i, kOpen));
  EXPECT_EQ(selected(r.select_for_delete("jo-x-worker-2,jo-x-worker-0")),
            (std::vector<std::string>{"jo-x-worker-2", "jo-x-worker-0"}));
  Refusal twice = refusal(r.select_for_delete("jo-x-worker-2,jo-x-worker-0,jo-x-worker-2"));
  EXPECT_EQ(twice.code, ReplyCode::usage);
  EXPECT_EQ(twice.text,
            "-p/--pods: pod jo-x-worker-2 named twice in 'jo-x-worker-2,jo-x-worker-0,"
            "jo-x-worker-2'; nothing was deleted");
  EXPECT_EQ(selected(r.select_for_delete("all")),
            (std::vector<std::string>{"jo-x-worker-0", "jo-x-worker-1", "jo-x-worker-2"}));
}

TEST(PodRegistry, DeleteIsRefusedAsAWholeNamingTheFirstBadPod) {
  Registry r = three_pods();
  ASSERT_FALSE(r.join(pod(0), 40, kOpen));
  ASSERT_FALSE(r.join(pod(1), 41, kOpen));
  r.leave("jo-x-worker-1", true);
  Refusal empty = refusal(r.select_for_delete("jo-x-worker-0,,jo-x-worker-2"));
  EXPECT_EQ(empty.code, ReplyCode::usage);
  EXPECT_EQ(empty.text, "-p/--pods: empty pod name in 'jo-x-worker-0,,jo-x-worker-2'");
  Refusal unknown = refusal(r.select_for_delete("jo-x-worker-0,nope"));
  EXPECT_EQ(unknown.code, ReplyCode::usage);
  EXPECT_EQ(unknown.text, "unknown pod 'nope': job jo-x has jo-x-worker-0 .. jo-x-worker-2");
  // A name without the job's prefix, or a typo away from one, is named.
  EXPECT_EQ(refusal(r.select_for_delete("worker-2")).text,
            "unknown pod 'worker-2' (did you mean 'jo-x-worker-2'?): job jo-x has jo-x-worker-0 "
            ".. jo-x-worker-2");
  EXPECT_EQ(refusal(r.select_for_delete("jo-x-wroker-2")).text,
            "unknown pod 'jo-x-wroker-2' (did you mean 'jo-x-worker-2'?): job jo-x has "
            "jo-x-worker-0 .. jo-x-worker-2");
  EXPECT_EQ(refusal(r.select_for_delete("orker-2")).text,
            "unknown pod 'orker-2': job jo-x has jo-x-worker-0 .. jo-x-worker-2");
  Refusal lost = refusal(r.select_for_delete("jo-x-worker-0,jo-x-worker-1"));
  EXPECT_EQ(lost.code, ReplyCode::refused);
  EXPECT_EQ(lost.text, "pod jo-x-worker-1 is not in the job now (lost); nothing was deleted");
  Refusal never = refusal(r.select_for_delete("jo-x-worker-2"));
  EXPECT_EQ(never.text,
            "pod jo-x-worker-2 is not in the job now (not joined yet); nothing was deleted");
  r.leave("jo-x-worker-0", true);
  Refusal nobody = refusal(r.select_for_delete("all"));
  EXPECT_EQ(nobody.code, ReplyCode::refused);
  EXPECT_EQ(nobody.text, "no worker pod is in the job now; nothing to delete");
  Refusal hostile = refusal(r.select_for_delete(std::string(100, 'x')));
  EXPECT_LT(hostile.text.size(), 200u);  // the name is quoted, cut at 64 characters
  Registry none("jo-y", {});
  EXPECT_EQ(refusal(none.select_for_delete("a")).text,
            "unknown pod 'a': job jo-y has no worker pods");
}
