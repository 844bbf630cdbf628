// PlacementBook: placement groups' requests, waits and changes, with the
// waiters as ReplyIds and answers, timers, lines and task stops as effects.
// Fake time, no CAF.
#include "atl/supervisor/placement_book.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace {

using atl::Millis;
using atl::PlacementNode;
using atl::ReplyCode;
using atl::supervisor::PlacementBook;
using atl::supervisor::PlacementEffects;
using atl::supervisor::PlacementNodes;
namespace placement = atl::supervisor::placement;

atl::Resources cpus(double n) {
  return {{"CPU", static_cast<std::int64_t>(n * atl::kResourceUnit)}};
}

PlacementNode node(const std::string& name, double cpu) {
  PlacementNode n;
  n.name = name;
  n.total = cpus(cpu);
  n.available = cpus(cpu);
  return n;
}

// The pods as the shell would give them, counting how often it was asked;
// `version` changes with `nodes`, as the shell's does.
struct Pods {
  std::vector<PlacementNode> nodes;
  std::uint64_t version = 1;
  int asked = 0;
  PlacementNodes view() {
    return {version, [this] {
              ++asked;
              return nodes;
            }};
  }
};

template <class E>
std::vector<E> all_of(const PlacementEffects& out) {
  std::vector<E> got;
  for (const auto& e : out)
    if (const auto* x = std::get_if<E>(&e)) got.push_back(*x);
  return got;
}

std::string state_of(const placement::Answer& a) {
  return nlohmann::json::parse(a.text).at("state").get<std::string>();
}

TEST(PlacementBook, AGroupThatFitsIsCreatedAtOnceAndItsWaitAnsweredNow) {
  Pods pods{{node("p0", 4), node("p1", 4)}};
  PlacementBook book;
  PlacementEffects out;
  auto made = book.create("g", "SPREAD", R"([{"CPU": 2}, {"CPU": 2}])", 0, pods.view(), 1000, out);
  ASSERT_EQ(made.code, ReplyCode::ok) << made.text;
  EXPECT_EQ(state_of(made), "CREATED");
  ASSERT_EQ(all_of<placement::Say>(out).size(), 1u);
  EXPECT_EQ(all_of<placement::Say>(out)[0].text, "placement group 1 (SPREAD 2 bundles): CREATED");
  auto now = book.answer_now(1);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->code, ReplyCode::ok);
  auto unknown = book.answer_now(9);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->code, ReplyCode::usage);
  EXPECT_EQ(unknown->text, "no placement group 9");
}

TEST(PlacementBook, AWaitingGroupIsPlacedWhenAPodJoinsAndItsWaitersHearIt) {
  Pods pods{{node("p0", 2)}};
  PlacementBook book;
  PlacementEffects out;
  auto made = book.create("", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out);
  ASSERT_EQ(made.code, ReplyCode::ok);
  EXPECT_EQ(state_of(made), "PENDING");
  EXPECT_FALSE(book.answer_now(1));  // waits
  out.clear();
  book.await(1, 5, std::chrono::seconds(10), out);
  book.await(1, 6, Millis(0), out);
  auto timers = all_of<placement::ArmWaitTimer>(out);
  ASSERT_EQ(timers.size(), 2u);
  EXPECT_EQ(timers[1].after, Millis(1));  // never 0
  pods.nodes.push_back(node("p1", 8));
  ++pods.version;
  out.clear();
  book.refresh(pods.view(), 2000, out);
  auto answers = all_of<placement::Answer>(out);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].reply, 5u);
  EXPECT_EQ(answers[1].reply, 6u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok);
  EXPECT_EQ(state_of(answers[0]), "CREATED");
  EXPECT_EQ(all_of<placement::Say>(out)[0].text, "placement group 1 CREATED");
  out.clear();
  book.on_wait_timer(timers[0].waiter, out);  // answered: its timer is nothing
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(book.owed(), 0u);
}

TEST(PlacementBook, NothingWaitingMeansThePodsAreNeverAskedFor) {
  Pods pods{{node("p0", 4)}};
  PlacementBook book;
  PlacementEffects out;
  for (int i = 0; i < 100; ++i) book.refresh(pods.view(), 1000 + i, out);
  EXPECT_EQ(pods.asked, 0);
  EXPECT_TRUE(out.empty());
}

TEST(PlacementBook, ThePodsAreAskedForAgainOnlyWhenTheirVersionChanges) {
  Pods pods{{node("p0", 4), node("p1", 4)}};
  PlacementBook book;
  PlacementEffects out;
  // What is free on each pod the book keeps itself: one view for four groups.
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(state_of(book.create("", "STRICT_PACK", R"([{"CPU": 2}, {"CPU": 2}])", 0, pods.view(),
                                   1000, out)),
              "CREATED");
  ASSERT_EQ(book.remove(1, pods.view(), 1000, out).code, ReplyCode::ok);
  EXPECT_EQ(state_of(book.create("", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out)),
            "CREATED")
      << "the place group 1 gave back";
  EXPECT_EQ(state_of(book.create("", "PACK", R"([{"CPU": 1}])", 0, pods.view(), 1000, out)),
            "PENDING");
  EXPECT_EQ(pods.asked, 1);
  // A third pod (a new version): asked again, and the waiting group placed on it.
  pods.nodes.push_back(node("p2", 1));
  ++pods.version;
  out.clear();
  book.refresh(pods.view(), 2000, out);
  EXPECT_EQ(pods.asked, 2);
  EXPECT_EQ(book.groups().find(4)->nodes.at(0), "p2");
  // The same pods taken away without a new version stay as the book saw them
  // (the version is the shell's promise that nothing changed).
  pods.nodes.clear();
  ASSERT_EQ(book.remove(2, pods.view(), 2000, out).code, ReplyCode::ok);
  EXPECT_EQ(state_of(book.create("", "PACK", R"([{"CPU": 0.5}])", 0, pods.view(), 2000, out)),
            "CREATED");
  EXPECT_EQ(book.groups().find(5)->nodes.at(0), "p1") << "where group 2 was";
  EXPECT_EQ(pods.asked, 2);
}

TEST(PlacementBook, AWaitsOwnDeadlineIsATimeoutNotTheGroupsFailure) {
  Pods pods{{node("p0", 1)}};
  PlacementBook book;
  PlacementEffects out;
  book.create("", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out);
  out.clear();
  book.await(1, 3, std::chrono::seconds(1), out);
  const auto waiter = all_of<placement::ArmWaitTimer>(out)[0].waiter;
  out.clear();
  book.on_wait_timer(waiter, out);
  auto answers = all_of<placement::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::timeout);
  EXPECT_EQ(answers[0].text.rfind("placement group 1 is still PENDING", 0), 0u) << answers[0].text;
  ASSERT_TRUE(book.groups().find(1));
  EXPECT_EQ(book.groups().find(1)->state, atl::GroupState::pending);
}

TEST(PlacementBook, AGroupsOwnTimeoutFailsItAtTheFirstRefreshAfterAndItsWaitersHear) {
  Pods pods{{node("p0", 1)}};
  PlacementBook book;
  PlacementEffects out;
  book.create("", "PACK", R"([{"CPU": 4}])", 500, pods.view(), 1000, out);
  book.await(1, 4, std::chrono::seconds(60), out);
  out.clear();
  book.refresh(pods.view(), 1400, out);  // not yet
  EXPECT_TRUE(all_of<placement::Answer>(out).empty());
  book.refresh(pods.view(), 1600, out);
  auto answers = all_of<placement::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::failed);
  EXPECT_EQ(answers[0].text.rfind("placement group 1 is FAILED", 0), 0u) << answers[0].text;
  auto now = book.answer_now(1);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->code, ReplyCode::failed);
}

TEST(PlacementBook, RemovingAGroupStopsItsTasksAndPlacesWhatWaitedForItsRoom) {
  Pods pods{{node("p0", 4)}};
  PlacementBook book;
  PlacementEffects out;
  book.create("a", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out);
  book.create("b", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out);
  EXPECT_EQ(book.groups().find(2)->state, atl::GroupState::pending);
  book.await(2, 7, std::chrono::seconds(60), out);
  out.clear();
  auto removed = book.remove(1, pods.view(), 2000, out);
  EXPECT_EQ(removed.code, ReplyCode::ok);
  auto stops = all_of<placement::StopTasks>(out);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].group, 1);
  EXPECT_EQ(stops[0].why, "placement group 1 was removed");
  auto answers = all_of<placement::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 7u);
  EXPECT_EQ(state_of(answers[0]), "CREATED");
  out.clear();
  auto again = book.remove(1, pods.view(), 2000, out);
  EXPECT_EQ(again.code, ReplyCode::refused);
  EXPECT_TRUE(out.empty());
}

TEST(PlacementBook, ALostPodsGroupsAreRescheduledOntoTheRest) {
  Pods pods{{node("p0", 4), node("p1", 4)}};
  PlacementBook book;
  PlacementEffects out;
  book.create("", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out);
  const std::string first = book.groups().find(1)->nodes.at(0);
  pods.nodes.erase(std::remove_if(pods.nodes.begin(), pods.nodes.end(),
                                  [&](const PlacementNode& n) { return n.name == first; }),
                   pods.nodes.end());
  ++pods.version;
  out.clear();
  book.lose_node(first, pods.view(), 2000, out);
  const auto* g = book.groups().find(1);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->state, atl::GroupState::created);
  EXPECT_NE(g->nodes.at(0), first);
  auto says = all_of<placement::Say>(out);
  ASSERT_GE(says.size(), 2u);
  EXPECT_EQ(says.front().text.rfind("placement group 1 RESCHEDULING", 0), 0u) << says.front().text;
  EXPECT_EQ(says.back().text, "placement group 1 CREATED");
}

TEST(PlacementBook, ClearingStopsEveryTaskRemovesEveryGroupAndTellsEachWaiterWhy) {
  Pods pods{{node("p0", 1)}};
  PlacementBook book;
  PlacementEffects out;
  book.create("", "PACK", R"([{"CPU": 4}])", 0, pods.view(), 1000, out);
  book.await(1, 8, std::chrono::seconds(60), out);
  out.clear();
  book.clear("the driver ended", out);
  auto stops = all_of<placement::StopTasks>(out);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].group, 0);
  auto answers = all_of<placement::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::failed);
  EXPECT_EQ(answers[0].text, "placement group 1 was removed: the driver ended");
  EXPECT_EQ(book.groups().find(1)->state, atl::GroupState::removed);
  EXPECT_EQ(book.owed(), 0u);
}

TEST(PlacementBook, BadRequestsAreOneUsageLineAndChangeNothing) {
  Pods pods{{node("p0", 4)}};
  PlacementBook book;
  PlacementEffects out;
  auto bad = book.create("", "SIDEWAYS", R"([{"CPU": 1}])", 0, pods.view(), 1000, out);
  EXPECT_EQ(bad.code, ReplyCode::usage);
  EXPECT_FALSE(bad.text.empty());
  bad = book.create("", "PACK", R"({"CPU": 1})", 0, pods.view(), 1000, out);
  EXPECT_EQ(bad.code, ReplyCode::usage);
  EXPECT_EQ(bad.text.rfind("bundles must be a JSON list of objects", 0), 0u) << bad.text;
  bad = book.create("", "PACK", R"([{"CPU": 1}, {"CPU": "x"}])", 0, pods.view(), 1000, out);
  EXPECT_EQ(bad.code, ReplyCode::usage);
  EXPECT_EQ(bad.text.rfind("bundle 1: ", 0), 0u) << bad.text;
  bad = book.create("", "PACK", R"([{"CPU": 1}])", -1, pods.view(), 1000, out);
  EXPECT_EQ(bad.code, ReplyCode::usage);
  EXPECT_EQ(bad.text, "timeout must not be negative");
  EXPECT_TRUE(book.groups().groups().empty());
  EXPECT_TRUE(out.empty());
}

TEST(PlacementBook, TheClusterSaysWhatEachPodHasReservedAndWhatWaits) {
  Pods pods{{node("p0", 4)}};
  PlacementBook book;
  PlacementEffects out;
  book.create("", "PACK", R"([{"CPU": 3}])", 0, pods.view(), 1000, out);
  book.create("", "PACK", R"([{"CPU": 2}])", 0, pods.view(), 1000, out);
  auto j = nlohmann::json::parse(book.cluster_json(pods.nodes, [](const std::string& pod) {
    return std::make_pair("machine-of-" + pod, "10.0.0.1");
  }));
  ASSERT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["node"], "machine-of-p0");
  EXPECT_DOUBLE_EQ(j["nodes"][0]["reserved"]["CPU"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["nodes"][0]["available"]["CPU"].get<double>(), 1.0);
  EXPECT_EQ(j["groups"].size(), 2u);
  ASSERT_EQ(j["pending_demand"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["pending_demand"][0]["CPU"].get<double>(), 2.0);
}

}  // namespace
