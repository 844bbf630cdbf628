#include "atl/supervisor/preflight.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using atl::NodeInfo;
using atl::NodeResources;
using atl::supervisor::Preflight;
using Ask = Preflight::Ask;
using Kind = Preflight::Ask::Kind;

namespace {

NodeInfo pod(const std::string& name, int gpus = 8) {
  NodeInfo i;
  i.pod = name;
  i.address = "10.0.0." + name;
  i.cpus = 16;
  i.gpus = gpus;
  return i;
}

Preflight round_of(std::vector<std::string> names, std::optional<std::string> head = {}) {
  Preflight::Plan plan;
  for (const auto& n : names) plan.active.push_back(pod(n));
  plan.spec = NodeResources{16, 8, 0, 0};
  plan.head = std::move(head);
  return Preflight(7, std::move(plan));
}

std::vector<std::string> who(const std::vector<Ask>& asks, Kind kind) {
  std::vector<std::string> out;
  for (const auto& a : asks) {
    EXPECT_TRUE(a.kind == kind) << a.pod;
    out.push_back(a.kind == Kind::reach
                      ? a.pod + ">" + a.to + "@" + a.host + ":" + std::to_string(a.port)
                      : a.pod);
  }
  return out;
}

using Names = std::vector<std::string>;

}  // namespace

TEST(Preflight, NoPodsPassAtOnce) {
  Preflight p = round_of({});
  EXPECT_TRUE(p.start().empty());
  ASSERT_TRUE(p.done());
  EXPECT_TRUE(p.verdict()->passed());
  EXPECT_EQ(p.round(), 7);
}

TEST(Preflight, OnePodSkipsTheNetworkRingAndPassesOnItsCheck) {
  Preflight p = round_of({"a"});
  EXPECT_EQ(who(p.start(), Kind::check), Names{"a"});
  EXPECT_FALSE(p.done());
  EXPECT_TRUE(p.checked("a", "").empty());
  ASSERT_TRUE(p.done());
  EXPECT_TRUE(p.verdict()->passed());
}

// The asks of one kind, as who() names them.
std::vector<std::string> of_kind(const std::vector<Ask>& asks, Kind kind) {
  std::vector<Ask> mine;
  for (const auto& a : asks)
    if (a.kind == kind) mine.push_back(a);
  return who(mine, kind);
}

TEST(Preflight, ThreePodsProbeThenConnectInARingWhileTheyCheckThemselves) {
  Preflight p = round_of({"a", "b", "c"});
  auto first = p.start();
  ASSERT_EQ(first.size(), 6u);  // the ring's probes and the node checks at once
  EXPECT_EQ(of_kind(first, Kind::probe), (Names{"a", "b", "c"}));
  EXPECT_EQ(of_kind(first, Kind::check), (Names{"a", "b", "c"}));
  EXPECT_TRUE(p.probed("b", 2002, "").empty());
  EXPECT_TRUE(p.probed("b", 9999, "").empty());  // a second answer counts once
  EXPECT_TRUE(p.checked("a", "").empty());       // a check counts whenever it comes
  EXPECT_TRUE(p.probed("a", 2001, "").empty());
  EXPECT_EQ(who(p.probed("c", 2003, ""), Kind::reach),
            (Names{"a>b@10.0.0.b:2002", "b>c@10.0.0.c:2003", "c>a@10.0.0.a:2001"}));
  EXPECT_TRUE(p.reached("a", "").empty());
  EXPECT_TRUE(p.reached("a", "").empty());  // again: still two to come
  EXPECT_TRUE(p.reached("c", "").empty());
  p.checked("c", "");
  EXPECT_TRUE(p.reached("b", "").empty());  // the ring passed; b's check is still out
  EXPECT_FALSE(p.done());
  p.checked("a", "");  // again: counts once
  EXPECT_FALSE(p.done());
  p.checked("b", "");
  ASSERT_TRUE(p.done());
  EXPECT_TRUE(p.verdict()->passed());
}

TEST(Preflight, ChecksThatEndBeforeTheRingWaitForIt) {
  Preflight p = round_of({"a", "b"});
  p.start();
  p.checked("a", "");
  p.checked("b", "");
  EXPECT_FALSE(p.done());
  p.take_passed();
  p.probed("a", 1, "");
  p.probed("b", 2, "");
  p.reached("a", "");
  EXPECT_FALSE(p.done());
  p.reached("b", "");
  ASSERT_TRUE(p.done());
  EXPECT_TRUE(p.verdict()->passed());
  // The ring's line first, as the steps are told, though the checks ended first.
  EXPECT_EQ(p.take_passed(),
            (Names{"pre-flight: the network ring passed: 2 pods, each reached the next over TCP",
                   "pre-flight: node checks passed on 2 pods (working dir, GPUs, the head "
                   "reachable)"}));
}

TEST(Preflight, AFailedCheckDuringTheRingEndsTheRound) {
  Preflight p = round_of({"a", "b"});
  p.start();
  p.probed("a", 1, "");
  EXPECT_TRUE(p.checked("b", "no GPUs").empty());
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.verdict()->pod, "b");
  EXPECT_EQ(p.verdict()->problem, "pod b failed its check: no GPUs");
  // The ring's later answers ask nothing more and change nothing.
  EXPECT_TRUE(p.probed("b", 2, "").empty());
  EXPECT_TRUE(p.reached("a", "refused").empty());
  EXPECT_EQ(p.verdict()->pod, "b");
  EXPECT_EQ(p.take_passed().size(), 1u);  // only the spec's line
}

TEST(Preflight, APodUnlikeTheSpecFailsTheRoundBeforeAnyRequest) {
  Preflight::Plan plan;
  plan.active = {pod("a"), pod("b", 4)};
  plan.spec = NodeResources{16, 8, 0, 0};
  Preflight p(1, plan);
  EXPECT_TRUE(p.start().empty());
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.verdict()->pod, "b");
  EXPECT_EQ(p.verdict()->problem,
            "pod b does not match the job's spec: gpus: the pod has 4, the job's spec asks for 8");
}

TEST(Preflight, AnUnreachablePodIsBlamedNotTheOneThatTried) {
  Preflight p = round_of({"a", "b"});
  p.start();
  p.probed("a", 1, "");
  p.probed("b", 2, "");
  EXPECT_TRUE(p.reached("a", "connection refused").empty());
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.verdict()->pod, "b");
  EXPECT_EQ(p.verdict()->problem,
            "pod a cannot reach pod b at 10.0.0.b:2 over TCP: connection refused");
  // Answers after the verdict change nothing.
  EXPECT_TRUE(p.reached("b", "").empty());
  EXPECT_TRUE(p.checked("a", "").empty());
  EXPECT_EQ(p.verdict()->pod, "b");
}

TEST(Preflight, EachStepsProblemNamesThePodAndTheStep) {
  {
    Preflight p = round_of({"a", "b"});
    p.start();
    p.probed("a", 0, "Address in use");
    EXPECT_EQ(p.verdict()->problem, "pod a cannot listen for the network check: Address in use");
  }
  {
    Preflight p = round_of({"a"});
    p.start();
    p.checked("a", "working dir /data is not writable");
    EXPECT_EQ(p.verdict()->pod, "a");
    EXPECT_EQ(p.verdict()->problem, "pod a failed its check: working dir /data is not writable");
  }
}

TEST(Preflight, ARequestWithoutAnAnswerFailsTheRoundInItsOwnWords) {
  {
    Preflight p = round_of({"a", "b"});
    auto asks = p.start();
    ASSERT_EQ(asks[1].kind, Kind::probe);
    p.unanswered(asks[1], "request timeout");
    EXPECT_EQ(p.verdict()->pod, "b");
    EXPECT_EQ(p.verdict()->problem, "pod b did not answer the network check: request timeout");
  }
  {
    Preflight p = round_of({"a", "b"});
    p.start();
    p.probed("a", 1, "");
    auto asks = p.probed("b", 2, "");
    p.unanswered(asks[0], "down");
    EXPECT_EQ(p.verdict()->problem, "pod a did not answer the network check: down");
  }
  {
    Preflight p = round_of({"a", "b"});
    auto asks = p.start();
    ASSERT_EQ(asks[3].kind, Kind::check);
    p.unanswered(asks[3], "request timeout");  // in the ring's time: still its own words
    EXPECT_EQ(p.verdict()->pod, "b");
    EXPECT_EQ(p.verdict()->problem, "pod b did not answer its check: request timeout");
  }
  {
    Preflight p = round_of({"a"});
    auto asks = p.start();
    p.unanswered(asks[0], "request timeout");
    EXPECT_EQ(p.verdict()->problem, "pod a did not answer its check: request timeout");
  }
  {
    Preflight p = round_of({"a"});
    auto asks = p.start();
    p.checked("a", "");
    p.unanswered(asks[0], "late");  // the round is over: a late timeout is nothing
    EXPECT_TRUE(p.verdict()->passed());
  }
}

TEST(Preflight, ATimeoutOfAnEarlierStepIsNotThisStepsFailure) {
  Preflight p = round_of({"a", "b"});
  auto first = p.start();
  p.probed("a", 1, "");
  p.probed("b", 2, "");
  p.unanswered(first[0], "request timeout");  // the probe step is over
  EXPECT_FALSE(p.done());
  p.checked("a", "");
  p.unanswered(first[2], "request timeout");  // a's check answered already
  EXPECT_FALSE(p.done());
}

TEST(Preflight, TheHeadsWorkingDirIsCheckedFirst) {
  Preflight p = round_of({"a"}, std::string("jo-x-head-0"));
  EXPECT_EQ(who(p.start(), Kind::head_dir), Names{"jo-x-head-0"});
  EXPECT_EQ(who(p.head_dir_checked(""), Kind::check), Names{"a"});
  {
    Preflight bad = round_of({"a"}, std::string("jo-x-head-0"));
    bad.start();
    EXPECT_TRUE(bad.head_dir_checked("/data: Read-only file system").empty());
    EXPECT_EQ(bad.verdict()->pod, "jo-x-head-0");
    EXPECT_EQ(bad.verdict()->problem, "head pod jo-x-head-0: /data: Read-only file system");
  }
  {
    Preflight hung = round_of({}, std::string("jo-x-head-0"));
    auto asks = hung.start();
    hung.unanswered(asks[0], "request timeout");
    EXPECT_EQ(hung.verdict()->problem,
              "head pod jo-x-head-0 did not finish its check of the working dir: request timeout");
  }
  {
    Preflight alone = round_of({}, std::string("jo-x-head-0"));
    alone.start();
    EXPECT_TRUE(alone.head_dir_checked("").empty());
    EXPECT_TRUE(alone.verdict()->passed());  // a driver with no workers
  }
}

TEST(Preflight, APodThatLeavesFailsTheRoundUnlessItIsOverOrNotInIt) {
  Preflight p = round_of({"a", "b"});
  p.start();
  p.pod_left("z");  // not in this round
  EXPECT_FALSE(p.done());
  p.pod_left("b");
  EXPECT_EQ(p.verdict()->pod, "b");
  EXPECT_EQ(p.verdict()->problem, "pod b left during the pre-flight");
  p.pod_left("a");
  EXPECT_EQ(p.verdict()->pod, "b");  // the first verdict stays
}

TEST(Preflight, EachStepThatPassesIsALineOnceAndAFailedStepNone) {
  Preflight p = round_of({"a", "b", "c"}, std::string("jo-x-head-0"));
  p.start();
  EXPECT_TRUE(p.take_passed().empty());  // nothing has passed yet
  p.head_dir_checked("");
  EXPECT_EQ(p.take_passed(), (Names{"pre-flight: the head pod's working dir is there and writable",
                                    "pre-flight: 3 pods match the job's spec"}));
  EXPECT_TRUE(p.take_passed().empty());  // each line once
  p.probed("a", 1, "");
  p.probed("b", 2, "");
  p.probed("c", 3, "");
  p.reached("a", "");
  p.reached("b", "");
  EXPECT_TRUE(p.take_passed().empty());  // the ring is not whole yet
  p.reached("c", "");
  EXPECT_EQ(p.take_passed(),
            Names{"pre-flight: the network ring passed: 3 pods, each reached the next over TCP"});
  p.checked("a", "");
  p.checked("b", "");
  p.checked("c", "");
  EXPECT_EQ(p.take_passed(), Names{"pre-flight: node checks passed on 3 pods (working dir, GPUs, "
                                   "the head reachable)"});

  // One pod: no ring, the singular; a failed check says nothing passed.
  Preflight one = round_of({"a"});
  one.start();
  EXPECT_EQ(one.take_passed(), Names{"pre-flight: 1 pod matches the job's spec"});
  one.checked("a", "no GPUs");
  EXPECT_TRUE(one.take_passed().empty());
  ASSERT_TRUE(one.done());
  EXPECT_FALSE(one.verdict()->passed());

  Preflight unlike(1, Preflight::Plan{{pod("a"), pod("b", 4)}, NodeResources{16, 8, 0, 0}, {}});
  unlike.start();
  EXPECT_TRUE(unlike.take_passed().empty());
}
