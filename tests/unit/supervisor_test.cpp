// The Supervisor in fake time (no sleeps, no processes, no CAF): the job's
// whole course through its inputs and its outbox. Pods join, the pre-flight
// asks and is answered, ranks launch and report; then the two faults the
// head exists for, end to end: a pod gone silent -> fenced -> lost -> the
// job restarts on the spare; a hang verdict -> the culprit's node tainted ->
// the spare takes its place -> restart. Late timers of an older round act on
// nothing; the end tells every agent and hands the outcome over once they left.
#include "atl/supervisor/supervisor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "atl/gpu/rendezvous.hpp"
#include "atl/supervisor/status_view.hpp"
#include "supervisor_fixture.hpp"

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using namespace fixture;

TEST(Supervisor, PodsJoinArePreflightedAndTheRanksLaunchOnTheActivePods) {
  Head h(spmd_spec(2, 1));
  std::set<std::int32_t> armed;  // the controller's ready and waiting timers, the first tick
  for (const auto& a : h.out.take<effect::Arm>()) armed.insert(a.kind);
  EXPECT_EQ(armed, (std::set<std::int32_t>{static_cast<std::int32_t>(JobTimer::ready),
                                           static_cast<std::int32_t>(JobTimer::waiting),
                                           kHeartbeatTimer}));
  h.join(3);
  EXPECT_EQ(h.out.take<effect::CheckSoon>().size(), 1u) << "only once all three are in";
  h.sup->all_in();
  EXPECT_EQ(h.sup->state(), JobState::initializing);
  auto first = h.out.all<effect::Ask>();
  ASSERT_FALSE(first.empty());
  for (const auto& a : first) EXPECT_NE(a.to, Head::agent(2)) << "the spare is not checked";
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  EXPECT_EQ(h.out.all<effect::NewAttempt>().size(), 1u);
  auto launches = h.start_launched();
  EXPECT_EQ(h.launched_pods(launches), (std::vector<std::string>{pod_name(0), pod_name(1)}));
  std::size_t ranks = 0;
  for (const auto& l : launches) ranks += l.order.ranks.size();
  EXPECT_EQ(ranks, 4u);
  EXPECT_EQ(h.sup->code().ranks().starting_count(), 0u);
  // Said once, when the last of them started (a launch's, a restart's end).
  std::vector<std::string> running;
  for (const auto& say : h.out.all<Say>())
    if (say.text.find("are running") != std::string::npos) running.push_back(say.text);
  EXPECT_EQ(running, (std::vector<std::string>{"all 4 ranks of attempt 1 are running"}));
  // Heartbeats go out to every joined pod once per interval (the spare too).
  h.out.effects.clear();
  h.run_for(1s);
  std::set<std::int64_t> beaten;
  for (const auto& b : h.out.all<effect::Heartbeat>()) beaten.insert(b.agent.value);
  EXPECT_EQ(beaten, (std::set<std::int64_t>{1, 2, 3}));
}

TEST(Supervisor, AStatusWatchIsHeldUntilTheStateChangesAndHearsEveryChange) {
  Head h(spmd_spec(2, 0));
  int kept = 0;
  auto keep = [&] { return ReplyId(++kept + 200); };
  auto now = h.sup->on(StateWatch{0, 10'000}, keep);
  ASSERT_TRUE(now.has_value()) << "a new watch hears the state now";
  std::istringstream first(now->text);
  std::uint64_t seen = 0;
  std::string state;
  first >> seen >> state;
  EXPECT_EQ(state, std::string(to_string(h.sup->state())));
  // Up to date: held, with a deadline, until the job moves.
  ASSERT_FALSE(h.sup->on(StateWatch{seen, 10'000}, keep));
  h.to_command(2);
  auto heard = h.out.take<Answer>();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].reply, 201u);
  EXPECT_EQ(heard[0].text.substr(heard[0].text.find(' ')), " initializing")
      << "answered at the first change, the rest left for its next ask";
  auto rest = h.sup->on(StateWatch{seen + 1, 10'000}, keep);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->text, std::to_string(seen + 2) + " command");
  // A stop and a recover in the same instant: both changes, in order.
  ASSERT_FALSE(h.sup->on(StateWatch{seen + 2, 10'000}, keep));
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  for (int i = 0; i < 2; ++i) h.end_ranks_on(pod_name(i), 15);
  ASSERT_EQ(h.sup->state(), JobState::debugStop);
  heard = h.out.take<Answer>();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].text, std::to_string(seen + 3) + " debugStop");
  // Nothing changes: the deadline answers with nothing new.
  ASSERT_FALSE(h.sup->on(StateWatch{seen + 3, 10'000}, keep));
  h.advance(10s);
  heard = h.out.take<Answer>();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].text, std::to_string(seen + 3));
}

TEST(Supervisor, ANamedActorsCallersAreAnsweredOnceAndAtOnceWhenItsHostGoes) {
  Head h(spmd_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  const HostId first{1};
  ASSERT_FALSE(h.sup->host_actor("counter", first, true, "j1-worker-0 pid 7"));
  auto taken = h.sup->host_actor("counter", HostId{9}, true, "j1-worker-1 pid 8");
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->text, "an actor named 'counter' exists already (hosted by j1-worker-0 pid 7)");
  EXPECT_EQ(h.sup->host_actor("a b", HostId{9}, true, "x")->code, ReplyCode::usage);
  // A call is forwarded to its host; its answer, with the host's own code, once.
  int kept = 0;
  auto keep = [&] { return ReplyId(++kept + 100); };
  ASSERT_FALSE(h.sup->on(ActorCall{"counter", "add 1", 2000}, keep));
  auto calls = h.out.take<effect::CallHost>();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].to, first);
  EXPECT_EQ(calls[0].request.bytes, "add 1");
  EXPECT_EQ(calls[0].timeout, 2000ms);
  h.sup->answered(calls[0].back, HostReply{42, "1"});
  h.sup->answered(calls[0].back, HostReply{0, "again"});
  auto answers = h.out.take<effect::CallAnswer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 101u);
  EXPECT_EQ(answers[0].code, 42);
  EXPECT_EQ(h.sup->on(ActorCall{"counter", "x", 0}, keep)->code, ReplyCode::usage) << "no timeout";
  EXPECT_EQ(kept, 1) << "a refused call keeps no reply";
  // A call times out: its caller hears so.
  ASSERT_FALSE(h.sup->on(ActorCall{"counter", "slow", 500}, keep));
  h.sup->unanswered(h.out.take<effect::CallHost>()[0].back, {true, "it timed out", 500ms});
  auto late = h.out.take<Answer>();
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].code, ReplyCode::timeout);
  EXPECT_EQ(late[0].text, "actor 'counter' did not answer within 500 ms");
  // Each heartbeat round pings the host, once until it answers; silent: gone.
  ASSERT_FALSE(h.sup->on(ActorCall{"counter", "add 2", 60000}, keep));
  h.run_for(2s);
  auto pings = h.out.take<effect::PingHost>();
  ASSERT_EQ(pings.size(), 1u) << "one ping out at a time";
  EXPECT_EQ(pings[0].to, first);
  EXPECT_EQ(pings[0].timeout, 5s) << "the heartbeat timeout";
  h.sup->unanswered(pings[0].back, {true, "it timed out", 5s});
  auto owed = h.out.take<Answer>();
  ASSERT_EQ(owed.size(), 1u);
  EXPECT_EQ(owed[0].reply, 103u);
  EXPECT_EQ(owed[0].code, ReplyCode::failed);
  EXPECT_EQ(owed[0].text,
            "the host of actor 'counter' (j1-worker-0 pid 7) is gone: no answer to a heartbeat "
            "for 5s");
  EXPECT_EQ(h.out.take<effect::Unwatch>().size(), 1u);
  EXPECT_EQ(h.sup->on(ActorCall{"counter", "x", 100}, keep)->text, "no actor named 'counter'");
  // A host that goes down: its callers at once; a second word about it is nothing.
  ASSERT_FALSE(h.sup->host_actor("counter", HostId{2}, true, "j1-worker-1 pid 8"));
  ASSERT_FALSE(h.sup->on(ActorCall{"counter", "add 3", 60000}, keep));
  EXPECT_TRUE(h.sup->host_down(HostId{2}, "exited"));
  EXPECT_FALSE(h.sup->host_down(HostId{2}, "exited"));
  EXPECT_EQ(h.out.take<Answer>().size(), 1u);
  // Closed by its host, or the job ends: every caller still waiting hears why.
  ASSERT_FALSE(h.sup->host_actor("counter", HostId{3}, true, "j1-worker-1 pid 9"));
  ASSERT_FALSE(h.sup->on(ActorCall{"counter", "add 4", 60000}, keep));
  ASSERT_FALSE(h.sup->on(ActorClose{"counter"}));
  EXPECT_EQ(h.out.take<Answer>()[0].text, "actor 'counter' was closed by its host");
  ASSERT_FALSE(h.sup->host_actor("queue", HostId{4}, true, "j1-worker-1 pid 9"));
  ASSERT_FALSE(h.sup->on(ActorCall{"queue", "get", 60000}, keep));
  h.sup->abandon_owed("the job ended");
  auto ended = h.out.take<Answer>();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].text, "the job ended");
  h.sup->cancel("cancelled by the test");
  auto closed = h.sup->host_actor("late", HostId{5}, true, "x");
  ASSERT_TRUE(closed);
  EXPECT_NE(closed->text.find("it has ended, no new actors"), std::string::npos) << closed->text;
}

TEST(Supervisor, AWebTerminalIsAllowedWithinItsLimitsAndTheTimelineSaysWhoAndHowLong) {
  JobSpec spec = spmd_spec(2, 0);
  Head h(spec);
  h.join(2);
  auto unknown = h.sup->open_terminal("j1-worker-7", "alice");
  ASSERT_TRUE(std::holds_alternative<Refusal>(unknown));
  EXPECT_EQ(std::get<Refusal>(unknown).text, "no pod named 'j1-worker-7' has joined the job");
  auto opening = h.sup->open_terminal(pod_name(1), "alice from 10.0.0.9");
  ASSERT_TRUE(std::holds_alternative<TerminalOpening>(opening));
  const auto [id, agent] = std::get<TerminalOpening>(opening);
  EXPECT_EQ(agent, Head::agent(1)) << "its pod's agent starts the shell";
  h.sup->terminal_started(id, true);
  h.clock.advance(65s);
  h.sup->terminal_closed(id, "the browser left");
  h.sup->terminal_closed(id, "the shell exited");  // once
  std::vector<std::string> said;
  for (const auto& e : h.sup->controller().events())
    if (e.kind == "terminal") said.push_back(e.text);
  EXPECT_EQ(said, (std::vector<std::string>{
                      "terminal 1 opened on pod j1-worker-1 by alice from 10.0.0.9",
                      "terminal 1 on pod j1-worker-1 closed after 1 min 5 s: the browser left"}));
  // A shell that could not start leaves no record and frees its place.
  for (int i = 0; i < 4; ++i) {
    auto o = h.sup->open_terminal(pod_name(0), "bob");
    ASSERT_TRUE(std::holds_alternative<TerminalOpening>(o)) << i;
    if (i == 0) h.sup->terminal_started(std::get<TerminalOpening>(o).id, false);
  }
  EXPECT_EQ(h.sup->terminals().open_count(), 3u);
  ASSERT_TRUE(std::holds_alternative<TerminalOpening>(h.sup->open_terminal(pod_name(0), "bob")));
  auto full = h.sup->open_terminal(pod_name(0), "bob");
  ASSERT_TRUE(std::holds_alternative<Refusal>(full));
  EXPECT_NE(std::get<Refusal>(full).text.find("its limit"), std::string::npos);
  // An ended job's pods are gone: refused, saying so (not "no pod named").
  h.sup->cancel("SIGTERM");
  auto ended = h.sup->open_terminal(pod_name(1), "carol");
  ASSERT_TRUE(std::holds_alternative<Refusal>(ended));
  EXPECT_EQ(std::get<Refusal>(ended).text,
            "job is in state failed: it has ended and its pods are gone (a terminal opens into "
            "the pods of a job that runs)");
}

TEST(Supervisor, HeartbeatLossFencesThePodAndTheJobRestartsOnTheSpare) {
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  h.out.effects.clear();
  h.silent.insert(pod_name(1));
  h.run_for(4s);
  EXPECT_TRUE(h.out.all<effect::Fence>().empty()) << "4 s of silence is within the 5 s timeout";
  h.run_for(2s);
  auto fences = h.out.take<effect::Fence>();
  ASSERT_EQ(fences.size(), 1u);
  EXPECT_EQ(fences[0].agent, Head::agent(1));
  EXPECT_NE(fences[0].order.why.find("stopped answering"), std::string::npos)
      << fences[0].order.why;
  auto forgets = h.out.take<effect::Forget>();
  ASSERT_EQ(forgets.size(), 1u);
  EXPECT_EQ(forgets[0].agent, Head::agent(1));
  EXPECT_FALSE(h.sup->pods().registry().joined(pod_name(1)));
  // A counted fault: the rest of the attempt is stopped and awaited.
  EXPECT_EQ(h.sup->state(), JobState::restarting);
  EXPECT_EQ(h.sup->controller().restarts().used(), 1);
  auto stops = h.out.take<effect::StopRanks>();
  ASSERT_FALSE(stops.empty());
  for (const auto& s : stops) EXPECT_NE(s.agent, Head::agent(1)) << "a fenced pod is not told";
  EXPECT_TRUE(h.out.take<effect::Launch>().empty()) << "not before the old ranks are gone";
  // The surviving pod's ranks end by the stop; the lost pod's ended with it.
  h.end_ranks_on(pod_name(0), 15);
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  EXPECT_TRUE(h.out.printed("job restarted: attempt 2"));
  // The new attempt's files come before the line that says so: whoever acts
  // on that line (`atlctl logs`, a look at logs/current) finds attempt 2's.
  std::ptrdiff_t files = -1, said = -1;
  for (std::size_t i = 0; i < h.out.effects.size(); ++i) {
    const auto* n = std::get_if<effect::NewAttempt>(&h.out.effects[i]);
    if (n && n->attempt == 2 && files < 0) files = static_cast<std::ptrdiff_t>(i);
    const auto* p = std::get_if<effect::Print>(&h.out.effects[i]);
    if (p && p->line.find("job restarted: attempt 2") != std::string::npos)
      said = static_cast<std::ptrdiff_t>(i);
  }
  ASSERT_GE(files, 0);
  EXPECT_LT(files, said);
  EXPECT_EQ(h.out.all<effect::NewAttempt>().size(), 1u) << "once per attempt";
  h.out.take<Say>();
  auto relaunched = h.start_launched();
  EXPECT_EQ(h.launched_pods(relaunched), (std::vector<std::string>{pod_name(0), pod_name(2)}));
  for (const auto& l : relaunched)
    for (const auto& p : l.order.ranks) EXPECT_EQ(p.attempt, 2);
  ASSERT_EQ(h.out.all<Say>().size(), 1u);  // the restart is done
  EXPECT_EQ(h.out.all<Say>()[0].text, "all 4 ranks of attempt 2 are running");
  // Its old self wakes up and is gone (its actor went down): nothing more.
  EXPECT_FALSE(h.sup->agent_down(Head::agent(1), "connection lost"));
  EXPECT_EQ(h.sup->controller().restarts().used(), 1);
}

TEST(Supervisor, AHungVerdictTaintsTheCulpritsNodeAndTheSpareTakesItsPlace) {
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  h.out.effects.clear();
  // Every rank silent (no line, no CPU): the watch grows suspect and looks.
  std::vector<effect::TakeStacks> looks;
  for (int i = 0; i < 40 && looks.empty(); ++i) {
    h.run_for(1s);
    for (int pod = 0; pod < 2; ++pod) {
      std::vector<ProgressReport> reports;
      for (std::int32_t rank = pod * 2; rank < pod * 2 + 2; ++rank)
        reports.push_back({rank, 1, 0, 0, 0, 'S', 100 + rank, 0, 0});
      h.sup->on(PodProgress{pod_name(pod), reports});
    }
    looks = h.out.take<effect::TakeStacks>();
  }
  ASSERT_EQ(looks.size(), 2u) << "no look at the stacks within 40 s";
  EXPECT_EQ(looks[0].to, Head::agent(0));  // each pod's agent asked, in one look
  EXPECT_EQ(looks[1].to, Head::agent(1));
  EXPECT_EQ(looks[0].back.look, looks[1].back.look);
  // Rank 1 (on pod 0) is in its own loader, the rest wait in all_reduce.
  auto stacks = [&] {
    std::vector<StackReport> out;
    for (std::int32_t r = 0; r < 4; ++r) {
      StackReport s;
      s.rank = r;
      s.attempt = 1;
      s.tool = "py-spy";
      const std::string frame =
          r == 1 ? "load_batch (data.py:10)" : "all_reduce (distributed_c10d.py:10)";
      s.text = "Thread 1 (idle): \"MainThread\"\n    " + frame + "\n    main (train.py:50)\n";
      out.push_back(s);
    }
    return out;
  };
  // Pod 1's agent fails to answer (an empty answer), pod 0's has them all:
  // the look is whole only with both.
  auto second_look_armed = [&] {
    auto arms = h.out.take<effect::Arm>();
    return std::any_of(arms.begin(), arms.end(),
                       [](const effect::Arm& a) { return a.kind == kSecondLookTimer; });
  };
  h.out.take<effect::Arm>();
  h.sup->answered(looks[1].back, {});
  EXPECT_FALSE(second_look_armed());
  h.sup->answered(looks[0].back, stacks());
  auto second = h.out.take<effect::Arm>();
  auto look_again = std::find_if(second.begin(), second.end(),
                                 [](const effect::Arm& a) { return a.kind == kSecondLookTimer; });
  ASSERT_NE(look_again, second.end());
  EXPECT_EQ(h.sup->state(), JobState::command) << "one look proves nothing";
  h.clock.advance(look_again->after);
  ASSERT_TRUE(h.sup->timer(kSecondLookTimer, look_again->arg));
  auto again = h.out.take<effect::TakeStacks>();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_NE(again[0].back.look, looks[0].back.look);
  h.sup->answered(again[0].back, stacks());
  h.sup->answered(looks[1].back, stacks());  // the first look's, late: nothing
  EXPECT_EQ(h.sup->state(), JobState::command);
  h.sup->answered(again[1].back, {});
  // Hung: rank 1's node (node-0) is tainted, a counted restart follows.
  EXPECT_EQ(h.sup->state(), JobState::restarting);
  EXPECT_TRUE(h.sup->controller().taints().tainted("node-0"));
  ASSERT_FALSE(h.sup->controller().restarts().history().empty());
  EXPECT_EQ(h.sup->controller().restarts().history().back().kind, FaultKind::job_hung);
  EXPECT_FALSE(h.out.take<effect::StopRanks>().empty());
  h.end_ranks_on(pod_name(0), 15);
  h.end_ranks_on(pod_name(1), 15);
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  EXPECT_EQ(h.launched_pods(h.start_launched()),
            (std::vector<std::string>{pod_name(1), pod_name(2)}));
  // The old attempt's second look, late, finds nothing to look at.
  h.out.effects.clear();
  ASSERT_TRUE(h.sup->timer(kSecondLookTimer, look_again->arg));
  EXPECT_TRUE(h.out.all<effect::TakeStacks>().empty());
  EXPECT_EQ(h.sup->state(), JobState::command);
}

TEST(Supervisor, DiagnoseIsAnsweredOnceEveryPodAskedGaveItsStacksOrFailed) {
  Head h(spmd_spec(2, 1));
  int kept = 0;
  auto keep = [&] { return ReplyId(40 + ++kept); };
  // Refused now (no rank started yet; a bad rank list): no reply kept, nothing asked.
  ASSERT_TRUE(h.sup->on(Diagnose{"", false}, keep));
  h.to_command(3);
  h.out.effects.clear();
  auto bad = h.sup->on(Diagnose{"9", false}, keep);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, ReplyCode::usage);
  EXPECT_EQ(kept, 0);
  EXPECT_TRUE(h.out.take<effect::TakeStacks>().empty());
  // Rank 1 runs on pod 0: only its agent is asked; the answer waits for it.
  EXPECT_FALSE(h.sup->on(Diagnose{"1", true}, keep));
  auto asks = h.out.take<effect::TakeStacks>();
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].to, Head::agent(0));
  EXPECT_GT(asks[0].timeout.count(), asks[0].request.budget_ms);
  EXPECT_TRUE(h.out.take<Answer>().empty());
  std::vector<StackReport> reports(2);
  for (int r = 0; r < 2; ++r) {
    reports[r].rank = r;
    reports[r].attempt = h.sup->code().attempt();
    reports[r].tool = "py-spy";
    reports[r].text = "Thread 1 (idle): \"MainThread\"\n    wait (train.py:9)\n";
  }
  h.sup->answered(asks[0].back, reports);
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, ReplyId(41));
  EXPECT_EQ(answers[0].code, ReplyCode::ok);
  auto j = nlohmann::json::parse(answers[0].text);
  ASSERT_EQ(j["ranks"].size(), 1u);  // pod 0 gave both of its ranks; rank 1 was asked for
  EXPECT_EQ(j["ranks"][0]["rank"], 1);
  EXPECT_EQ(j["ranks"][0]["stack"], reports[1].text);
  // Every rank: both pods asked; one that fails counts as answered (no stacks).
  EXPECT_FALSE(h.sup->on(Diagnose{"all", false}, keep));
  asks = h.out.take<effect::TakeStacks>();
  ASSERT_EQ(asks.size(), 2u);
  h.sup->answered(asks[1].back, {});
  EXPECT_TRUE(h.out.take<Answer>().empty());
  h.sup->answered(asks[0].back, reports);
  answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, ReplyId(42));
  // One still waiting when the head ends hears why, once.
  EXPECT_FALSE(h.sup->on(Diagnose{"", false}, keep));
  asks = h.out.take<effect::TakeStacks>();
  h.sup->abandon_owed("the supervisor is going down");
  answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::failed);
  EXPECT_EQ(answers[0].text, "the supervisor is going down");
  h.sup->answered(asks[0].back, reports);  // late: nothing
  EXPECT_TRUE(h.out.take<Answer>().empty());
}

TEST(Supervisor, TimersOfAnOlderRestartRoundActOnNothing) {
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  h.sup->evicted(pod_name(1), "SIGTERM");  // Kubernetes evicts the pod: one restart
  ASSERT_EQ(h.sup->state(), JobState::restarting);
  std::vector<effect::Arm> round_one;
  for (const auto& a : h.out.take<effect::Arm>())
    if (a.kind < kJobTimerCount) round_one.push_back(a);
  ASSERT_FALSE(round_one.empty());
  h.end_ranks_on(pod_name(0), 15);
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  h.start_launched();
  h.out.effects.clear();
  // The first restart's stop and ready timers fire late: the job runs on.
  for (const auto& a : round_one) EXPECT_TRUE(h.sup->timer(a.kind, a.arg));
  EXPECT_EQ(h.sup->state(), JobState::command);
  EXPECT_TRUE(h.out.all<effect::StopRanks>().empty());
  EXPECT_TRUE(h.out.all<effect::Launch>().empty());
  EXPECT_EQ(h.sup->controller().restarts().used(), 1);
  EXPECT_FALSE(h.sup->timer(kDebugStopTimer + 100, 1)) << "no timer of that kind";
}

TEST(Supervisor, AJoinedPodIsToldItsHeartbeatsAndItsOwnLogStream) {
  JobSpec spec = spmd_spec(3, 0);
  spec.heartbeat.interval = 700ms;
  spec.heartbeat.timeout = 9s;
  Head h(spec);
  ASSERT_TRUE(h.sup->join(h.info(0), Head::agent(0)).joined());
  auto terms = h.sup->join(h.info(2), Head::agent(2));
  ASSERT_TRUE(terms.joined()) << terms.refusal;
  EXPECT_EQ(terms.heartbeat_interval_ms, 700);
  EXPECT_EQ(terms.heartbeat_timeout_ms, 9000);
  EXPECT_EQ(terms.log_stream, StreamId::pod_log(2)) << "logs/pod-worker-2.log, whatever the order";
  // The same pod again (its agent restarted before the head saw it go): for now.
  auto again = h.sup->join(h.info(2), AgentId{77});
  EXPECT_FALSE(again.joined());
  EXPECT_EQ(again.heartbeat_interval_ms, 0) << "a refused pod is given no terms";
}

TEST(Supervisor, ARefusedJoinChangesNothingAndTheEndWaitsForEveryAgentToLeave) {
  Head h(spmd_spec(1, 0));
  h.to_command(1);
  NodeInfo stranger = h.info(7);
  stranger.pod = "j2-worker-0";
  auto refused = h.sup->join(stranger, AgentId{99});
  ASSERT_FALSE(refused.joined());
  EXPECT_FALSE(refused.retry);
  EXPECT_EQ(h.sup->pods().registry().joined_count(), 1u);
  EXPECT_FALSE(h.sup->pod_of_agent(AgentId{99}));
  h.out.effects.clear();
  // Both ranks succeed: the job ends; the agent is told and awaited.
  for (std::int32_t rank = 0; rank < 2; ++rank)
    h.sup->process_ended({user_code_stream(rank), 1, pod_name(0), 0, 0, "", ""});
  EXPECT_EQ(h.sup->state(), JobState::succeeded);
  auto shutdowns = h.out.take<effect::Shutdown>();
  ASSERT_EQ(shutdowns.size(), 1u);
  EXPECT_EQ(shutdowns[0].order.code, 0);
  EXPECT_EQ(h.out.take<effect::Ending>().size(), 1u);
  EXPECT_TRUE(h.out.all<effect::Release>().empty()) << "not before the agent left";
  auto late = h.sup->join(h.info(0), AgentId{5});
  ASSERT_FALSE(late.joined());
  EXPECT_NE(late.refusal.find("takes no new workers"), std::string::npos) << late.refusal;
  EXPECT_TRUE(h.sup->agent_down(Head::agent(0), "normal"));
  auto released = h.out.take<effect::Release>();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].outcome, 0);
}

// An exception in a shell handler: the job fails with what cannot make it
// worse: said twice, every agent (the head pod's too) told to shut down
// with 1, the caller still waiting answered failed.
TEST(Supervisor, AnExceptionFailsTheJobTellsEveryAgentAndAnswersWhoWaits) {
  Head h(spmd_spec(2, 0));
  h.to_command(2);
  auto stop = h.sup->begin_stop();
  ASSERT_EQ(stop.code, ReplyCode::ok) << stop.text;
  h.sup->await_stop(stop.op, 11);  // the ranks still stop: the caller waits
  h.out.effects.clear();
  h.sup->crashed("internal error in the supervisor: boom");
  EXPECT_EQ(h.sup->state(), JobState::failed);
  EXPECT_EQ(h.sup->controller().failure(), "internal error in the supervisor: boom");
  EXPECT_EQ(h.out.take<effect::Ending>().size(), 1u);
  std::vector<std::string> printed;
  for (const auto& p : h.out.take<effect::Print>()) printed.push_back(p.line);
  EXPECT_EQ(printed, (std::vector<std::string>{"job failed: internal error in the supervisor: boom",
                                               "Job status:  failed"}));
  auto shutdowns = h.out.take<effect::Shutdown>();
  ASSERT_EQ(shutdowns.size(), 3u);
  std::set<std::int64_t> told;
  for (const auto& s : shutdowns) {
    EXPECT_EQ(s.order.code, 1);
    told.insert(s.agent.value);
  }
  EXPECT_EQ(told, (std::set<std::int64_t>{Head::agent(0).value, Head::agent(1).value,
                                          Head::kHeadAgent.value}));
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 11);
  EXPECT_EQ(answers[0].code, ReplyCode::failed);
  EXPECT_EQ(answers[0].text, "the supervisor failed: internal error in the supervisor: boom");
}

TEST(Supervisor, ADeleteIsRefusedWholeOrDeletesAndRestartsOnce) {
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  h.out.effects.clear();
  auto refused = h.sup->on(DeletePods{pod_name(0) + "," + "j1-worker-9"});
  ASSERT_TRUE(refused);
  EXPECT_TRUE(h.out.effects.empty()) << "a refusal changes nothing";
  EXPECT_EQ(h.sup->state(), JobState::command);
  EXPECT_FALSE(h.sup->on(DeletePods{pod_name(1)}));
  auto deletes = h.out.take<effect::Delete>();
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].agent, Head::agent(1));
  EXPECT_EQ(h.sup->state(), JobState::restarting);
}

JobSpec driver_spec(int workers, int spares) {
  JobSpec spec = spmd_spec(workers, spares);
  spec.mode = JobMode::driver;
  spec.nproc_per_node = 1;
  return spec;
}

// The driver runs under the head pod's agent like a pod's ranks under theirs:
// launched, stopped (the driver alone in ray mode) and, should that agent
// end, the job fails saying so (nothing would report its processes).
TEST(Supervisor, TheHeadPodsProcessesRunUnderItsOwnAgent) {
  Head h(driver_spec(1, 0));
  h.join(1);
  h.sup->all_in();
  h.pass_preflight();
  auto launched = h.start_launched();
  ASSERT_EQ(launched.size(), 1u);
  EXPECT_EQ(launched[0].agent, Head::kHeadAgent);
  EXPECT_EQ(launched[0].order.ranks.at(0).stream, StreamId::driver());
  h.out.effects.clear();
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  auto stops = h.out.take<effect::StopRanks>();
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[1].agent, Head::kHeadAgent);
  EXPECT_EQ(stops[1].order.grace_ms, 5000);

  JobSpec ray = driver_spec(1, 0);
  ray.mode = JobMode::ray;
  Head r(ray);
  r.to_command(1);
  r.out.effects.clear();
  ASSERT_EQ(r.sup->begin_stop().code, ReplyCode::ok);
  auto driver_only = r.out.take<effect::StopStream>();
  ASSERT_EQ(driver_only.size(), 1u) << "Ray stays up";
  EXPECT_EQ(driver_only[0].agent, Head::kHeadAgent);
  EXPECT_EQ(driver_only[0].order.stream, StreamId::driver());
  EXPECT_TRUE(r.out.all<effect::StopRanks>().empty());

  EXPECT_TRUE(h.sup->agent_down(Head::kHeadAgent, "killed"));
  EXPECT_EQ(h.sup->state(), JobState::failed);
  EXPECT_NE(h.sup->controller().failure().find("the head pod's agent ended (killed)"),
            std::string::npos)
      << h.sup->controller().failure();
}

// The pre-flight's check of the driver's working dir is asked of the head
// pod's agent, as a pod's checks of its own; a step that got no answer ends
// the round with the words of why (the job fails before any launch).
TEST(Supervisor, TheHeadsDirCheckIsAskedOfItsAgentAndAnUnansweredStepFailsTheRound) {
  JobSpec spec = driver_spec(1, 0);
  spec.working_dir = "/data/job";
  Head h(spec);
  h.join(1);
  h.sup->all_in();
  auto first = h.out.take<effect::Ask>();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].to, Head::kHeadAgent);
  EXPECT_EQ(first[0].request.step, PreflightRequest::head_dir);
  EXPECT_EQ(first[0].request.working_dir, "/data/job");
  EXPECT_GT(first[0].timeout.count(), 0);
  h.sup->answered(first[0].back, PreflightReply{"", 0});
  auto probes = h.out.take<effect::Ask>();
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].to, Head::agent(0));
  h.sup->unanswered(probes[0].back, {true, "it timed out", probes[0].timeout});
  h.sup->answered(probes[0].back, PreflightReply{"", 4000});  // late: nothing
  EXPECT_TRUE(h.out.take<effect::Launch>().empty());
  EXPECT_EQ(h.sup->state(), JobState::failed);
  EXPECT_NE(h.sup->controller().failure().find("it timed out"), std::string::npos)
      << h.sup->controller().failure();
}

// A part of the head the job cannot do without (its log writer, a log's
// disk) failing fails the job with its words, every pod told to stop.
TEST(Supervisor, APartOfTheHeadFailingFailsTheJobSayingWhich) {
  Head h(spmd_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  h.sup->head_failed("logs are incomplete: rank-0.log: No space left on device");
  EXPECT_EQ(h.sup->state(), JobState::failed);
  EXPECT_NE(h.sup->controller().failure().find("No space left on device"), std::string::npos)
      << h.sup->controller().failure();
  EXPECT_FALSE(h.out.all<effect::StopRanks>().empty() && h.out.all<effect::Shutdown>().empty())
      << "the pods are told";
}

TEST(Supervisor, ADriversTaskGoesToTheLeastLoadedPodAndEndsWithItsPod) {
  Head h(driver_spec(2, 0));
  h.join(2);
  h.sup->all_in();
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  // The driver runs under the head pod's agent, as a pod's ranks under theirs.
  auto driver = h.start_launched();
  ASSERT_EQ(driver.size(), 1u);
  EXPECT_EQ(driver[0].agent, Head::kHeadAgent);
  ASSERT_EQ(driver[0].order.ranks.size(), 1u);
  EXPECT_EQ(driver[0].order.ranks[0].stream, StreamId::driver());
  h.out.effects.clear();
  // A refusal keeps no reply and starts nothing.
  int kept = 0;
  auto keep = [&] { return static_cast<ReplyId>(++kept); };
  auto bad = h.sup->start_task({0, 0, "", "echo hi", {"NOEQUALS"}, ""}, keep);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, ReplyCode::usage);
  EXPECT_NE(bad->text.find("NOEQUALS"), std::string::npos) << bad->text;
  auto no_pod = h.sup->start_task({0, 0, "j1-worker-9", "echo hi", {}, ""}, keep);
  ASSERT_TRUE(no_pod);
  EXPECT_EQ(no_pod->code, ReplyCode::usage);
  EXPECT_EQ(kept, 0);
  EXPECT_TRUE(h.out.effects.empty());
  // Two tasks: one on each pod (the least loaded first).
  ASSERT_FALSE(h.sup->start_task({0, 0, "", "sleep 100", {"A=1"}, ""}, keep));
  ASSERT_FALSE(h.sup->start_task({0, 0, "", "sleep 100", {}, ""}, keep));
  EXPECT_EQ(kept, 2);
  auto runs = h.out.take<effect::RunOn>();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(runs[0].agent, runs[1].agent) << "each pod runs one";
  EXPECT_EQ(runs[0].order.ranks[0].stream, StreamId::of_task(1));
  EXPECT_TRUE(runs[0].order.ranks[0].control);
  EXPECT_NE(std::find(runs[0].order.ranks[0].env.begin(), runs[0].order.ranks[0].env.end(), "A=1"),
            runs[0].order.ranks[0].env.end());
  // The first starts: its start is answered with its pid.
  const std::string pod0 = h.sup->pod_of_agent(runs[0].agent).value();
  h.sup->process_started({StreamId::of_task(1), 0, pod0, 4242});
  auto answers = h.out.take<task::Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok);
  EXPECT_EQ(answers[0].status.pid, 4242);
  // A wait on it is kept with its own deadline.
  ASSERT_FALSE(h.sup->task_now(1, 60000));
  h.sup->await_task(1, 7, 60s);
  auto waits = h.out.take<effect::ArmWait>();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].kind, kTaskWaitTimer);
  // Its pod is lost: the task ended with it, the wait hears so; the task
  // still starting on the other pod is untouched.
  ASSERT_TRUE(h.sup->agent_down(runs[0].agent, "connection lost"));
  answers = h.out.take<task::Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 7u);
  EXPECT_TRUE(answers[0].status.done);
  EXPECT_FALSE(answers[0].status.error.empty());
  const Task* other = h.sup->tasks().book().find(2);
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->record.done);
  // A kill of an ended task is refused; of a live one, its pod stops it.
  auto again = h.sup->on(TaskKill{1});
  ASSERT_TRUE(again);
  EXPECT_NE(again->text.find("ended already"), std::string::npos) << again->text;
  EXPECT_FALSE(h.sup->on(TaskKill{2}));
  auto stops = h.out.take<effect::StopStream>();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].order.stream, StreamId::of_task(2));
  EXPECT_EQ(stops[0].agent, runs[1].agent);
}

// Placement keeps its own view of the pods and makes it again only when the
// pods, the taints or the active pods change: each change must be seen.
TEST(Supervisor, PlacementSeesATaintAndItsRemovalAtOnce) {
  Head h(driver_spec(3, 0));
  h.to_command(3);
  auto on = [&](const char* name) {
    const Answer a = h.sup->create_group({name, "STRICT_PACK", R"([{"CPU": 8}])", 0});
    EXPECT_EQ(a.code, ReplyCode::ok) << a.text;
    const auto j = nlohmann::json::parse(a.text);
    return j.at("state") == "CREATED" ? j.at("nodes").at(0).get<std::string>() : std::string();
  };
  EXPECT_EQ(on("a"), pod_name(0));
  ASSERT_EQ(taint_command(*h.sup, "set", "node-1").code, ReplyCode::ok);
  EXPECT_EQ(on("b"), pod_name(2)) << "not on the tainted node";
  ASSERT_EQ(h.sup->on(GroupRemove{2}).code, ReplyCode::ok);
  ASSERT_EQ(taint_command(*h.sup, "remove", "node-1").code, ReplyCode::ok);
  EXPECT_EQ(on("c"), pod_name(1)) << "the node is untainted";
}

TEST(Supervisor, PlacementIsRefusedOutsideDriverModeAndAWaitIsKeptUntilItsGroupChanges) {
  Head spmd(spmd_spec(1, 0));
  auto refused = spmd.sup->create_group({"g", "PACK", R"([{"CPU": 1}])", 0});
  EXPECT_EQ(refused.code, ReplyCode::refused);
  EXPECT_NE(refused.text.find("driver-mode"), std::string::npos) << refused.text;

  Head h(driver_spec(1, 0));
  h.to_command(1);
  h.out.effects.clear();
  // 16 CPUs do not fit one pod of 8: it waits (no timeout) until one comes.
  auto created = h.sup->create_group({"big", "PACK", R"([{"CPU": 8}, {"CPU": 8}])", 0});
  ASSERT_EQ(created.code, ReplyCode::ok) << created.text;
  const std::int64_t id = 1;
  ASSERT_FALSE(h.sup->group_now(id)) << "it waits";
  h.sup->await_group(id, 3, 60s);
  EXPECT_EQ(h.out.take<effect::ArmWait>().size(), 1u);
  EXPECT_TRUE(h.out.all<Answer>().empty());
  // Removing the group answers its wait.
  auto removed = h.sup->on(GroupRemove{id});
  EXPECT_EQ(removed.code, ReplyCode::ok) << removed.text;
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 3u);
}

// A driver's connection ends (its process killed): the groups and tasks it
// made go with it, as Ray's; what it made detached stays, and another
// driver's are untouched. Before, they held the pods' CPUs for ever.
TEST(Supervisor, WhatADriverMadeEndsWithItsConnectionButWhatItDetached) {
  Head h(driver_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  const OwnerId killed{1}, other{2};
  int kept = 0;
  auto keep = [&] { return static_cast<ReplyId>(++kept); };
  ASSERT_EQ(h.sup->create_group({"a", "PACK", R"([{"CPU": 1}])", 0}, killed).code, ReplyCode::ok);
  ASSERT_EQ(h.sup->create_group({"b", "PACK", R"([{"CPU": 1}])", 0}, killed).code, ReplyCode::ok);
  ASSERT_EQ(h.sup->create_group({"c", "PACK", R"([{"CPU": 1}])", 0}, other).code, ReplyCode::ok);
  ASSERT_FALSE(h.sup->start_task({0, 0, "", "sleep 100", {}, ""}, keep, killed));  // task 1
  ASSERT_FALSE(h.sup->start_task({0, 0, "", "sleep 100", {}, ""}, keep, killed));  // task 2
  ASSERT_FALSE(h.sup->start_task({0, 0, "", "sleep 100", {}, ""}, keep, other));   // task 3
  // Detached: group 2 and task 2; only by their maker.
  auto not_yours = h.sup->disown(true, 2, other);
  ASSERT_TRUE(not_yours);
  EXPECT_EQ(not_yours->code, ReplyCode::refused);
  EXPECT_FALSE(h.sup->disown(true, 2, killed));
  EXPECT_FALSE(h.sup->disown(false, 2, killed));
  auto twice = h.sup->disown(false, 2, killed);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->code, ReplyCode::usage);
  h.out.effects.clear();

  h.sup->owner_gone(killed);
  auto stops = h.out.take<effect::StopStream>();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].order.stream, StreamId::of_task(1));
  const auto* a = h.sup->groups().groups().find(1);
  const auto* b = h.sup->groups().groups().find(2);
  const auto* c = h.sup->groups().groups().find(3);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->state, GroupState::removed);
  EXPECT_EQ(b->state, GroupState::created);
  EXPECT_EQ(c->state, GroupState::created);
  h.out.effects.clear();
  h.sup->owner_gone(killed);  // once
  EXPECT_TRUE(h.out.all<effect::StopStream>().empty());
  EXPECT_TRUE(h.out.all<Say>().empty()) << "nothing left, nothing said";
  // A task that ended on its own is not its owner's any more.
  const std::string pod = h.sup->tasks().book().find(3)->record.pod;
  h.sup->process_ended({StreamId::of_task(3), 0, pod, 0, 0, "", ""});
  EXPECT_EQ(h.sup->owners().owned(), 1u);  // group 3
  h.sup->owner_gone(other);
  EXPECT_TRUE(h.out.all<effect::StopStream>().empty());
  EXPECT_EQ(h.sup->groups().groups().find(3)->state, GroupState::removed);
  EXPECT_EQ(h.sup->owners().owners(), 0u);
}

// A detached actor with max_restarts whose driver is gone (Ray's GCS
// restarts it): the head starts its task again as it was, on a pod still
// in the job when its own was lost, later each time it dies young, within
// its count; its maker's id kills the one running now and ends it all.
TEST(Supervisor, ADetachedTaskIsStartedAgainByTheHeadAfterItsDriverIsGoneWithinItsCount) {
  Head h(driver_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  auto said = [&](const std::string& part) {
    for (const auto& line : h.out.all<Say>())
      if (line.text.find(part) != std::string::npos) return true;
    return false;
  };
  const OwnerId maker{1};
  int kept = 0;
  auto keep = [&] { return static_cast<ReplyId>(++kept); };
  TaskRequest r{0, 0, "", "exec python -m atl._worker actor", {"A=1"}, ""};
  r.restarts = 2;
  auto owned = h.sup->start_task(r, keep, maker);
  ASSERT_TRUE(owned) << "restarts are a detached task's";
  EXPECT_EQ(owned->code, ReplyCode::usage);
  EXPECT_NE(owned->text.find("detached"), std::string::npos) << owned->text;
  r.restarts = -2;
  r.detached = true;
  ASSERT_TRUE(h.sup->start_task(r, keep, maker));
  EXPECT_EQ(kept, 0);
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty()) << "a refusal starts nothing";

  r.restarts = 2;
  ASSERT_FALSE(h.sup->start_task(r, keep, maker));  // task 1
  auto runs = h.out.take<effect::RunOn>();
  ASSERT_EQ(runs.size(), 1u);
  const std::string pod = h.sup->pod_of_agent(runs[0].agent).value();
  h.sup->process_started({StreamId::of_task(1), 0, pod, 501});
  h.sup->owner_gone(maker);
  EXPECT_TRUE(h.out.all<effect::StopStream>().empty()) << "detached: it outlives its driver";
  h.out.effects.clear();

  // Its process dies after a minute: started again at once, as it was.
  h.advance(60s);
  h.out.effects.clear();
  h.sup->process_ended({StreamId::of_task(1), 0, pod, 1, 0, "", ""});
  h.advance(0ms);
  runs = h.out.take<effect::RunOn>();
  ASSERT_EQ(runs.size(), 1u);
  const auto& again = runs[0].order.ranks[0];
  EXPECT_EQ(again.stream, StreamId::of_task(2));
  EXPECT_EQ(again.command, "exec python -m atl._worker actor");
  for (const char* var : {"A=1", "ATL_TASK_RESTARTS=1", "ATL_TASK_ID=2"})
    EXPECT_NE(std::find(again.env.begin(), again.env.end(), var), again.env.end()) << var;
  EXPECT_TRUE(said("task 1 started again as task 2 (restart 1 of 2)"));
  EXPECT_EQ(h.sup->restarts().current(1), 2);
  const std::string second = h.sup->pod_of_agent(runs[0].agent).value();
  h.sup->process_started({StreamId::of_task(2), 0, second, 502});

  // Its pod is lost a second later: it died young, so it starts again
  // after kFirstDelay, on the pod left.
  h.advance(1s);
  h.out.effects.clear();
  ASSERT_TRUE(h.sup->agent_down(runs[0].agent, "connection lost"));
  h.advance(TaskRestarts::kFirstDelay - 1ms);
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty()) << "not yet";
  h.advance(1ms);
  runs = h.out.take<effect::RunOn>();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].order.ranks[0].stream, StreamId::of_task(3));
  const std::string third = h.sup->pod_of_agent(runs[0].agent).value();
  EXPECT_NE(third, second) << "its own pod is gone";
  h.sup->process_started({StreamId::of_task(3), 0, third, 503});

  // Its maker's id kills the task running now; that end starts nothing.
  h.out.effects.clear();
  EXPECT_FALSE(h.sup->on(TaskKill{1}));
  auto stops = h.out.take<effect::StopStream>();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].order.stream, StreamId::of_task(3));
  h.sup->process_ended({StreamId::of_task(3), 0, third, 0, 15, "", ""});
  h.advance(60s);
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty());
  EXPECT_EQ(h.sup->restarts().size(), 0u);

  // Another chain uses its count: its last end says so and starts nothing.
  r.restarts = 1;
  ASSERT_FALSE(h.sup->start_task(r, keep, maker));  // task 4
  h.sup->process_ended({StreamId::of_task(4), 0, third, 1, 0, "", ""});
  h.advance(0ms);
  ASSERT_EQ(h.out.take<effect::RunOn>().size(), 2u);  // task 4, then task 5
  h.sup->process_ended({StreamId::of_task(5), 0, third, 1, 0, "", ""});
  h.advance(60s);
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty());
  EXPECT_TRUE(
      said("task 4 ended (as task 5) and is not started again: its 1 restarts "
           "are used"));
}

// A detached actor's own reservation (num_cpus=): the head gives it back
// once the actor ended for good, its maker long gone; a group it was only
// put in is the user's.
TEST(Supervisor, ADetachedTasksOwnGroupIsRemovedAtItsEndForGoodNotBefore) {
  Head h(driver_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  int kept = 0;
  auto keep = [&] { return static_cast<ReplyId>(++kept); };
  const OwnerId maker{1};
  ASSERT_EQ(h.sup->create_group({"own", "PACK", R"([{"CPU": 1}])", 0}, maker).code, ReplyCode::ok);
  ASSERT_EQ(h.sup->create_group({"lent", "PACK", R"([{"CPU": 1}])", 0}, maker).code, ReplyCode::ok);
  ASSERT_FALSE(h.sup->disown(true, 1, maker));
  ASSERT_FALSE(h.sup->disown(true, 2, maker));
  TaskRequest r{1, 0, "", "exec python -m atl._worker actor", {}, ""};
  r.own_group = true;
  auto owned = h.sup->start_task(r, keep, maker);
  ASSERT_TRUE(owned) << "own_group is a detached task's";
  EXPECT_EQ(owned->code, ReplyCode::usage);
  r.detached = true;
  r.restarts = 1;
  ASSERT_FALSE(h.sup->start_task(r, keep, maker));  // task 1, in group 1, its own
  TaskRequest in_lent{2, 0, "", "exec python -m atl._worker actor", {}, ""};
  in_lent.detached = true;
  in_lent.restarts = 1;
  ASSERT_FALSE(h.sup->start_task(in_lent, keep, maker));  // task 2, in group 2
  h.sup->owner_gone(maker);
  const std::string pod = h.sup->tasks().book().find(1)->record.pod;
  const std::string lent_pod = h.sup->tasks().book().find(2)->record.pod;

  // It dies and is started again in its group: the group stays.
  h.sup->process_ended({StreamId::of_task(1), 0, pod, 1, 0, "", ""});
  h.advance(0ms);
  ASSERT_NE(h.sup->tasks().book().find(3), nullptr);
  EXPECT_EQ(h.sup->tasks().book().find(3)->group, 1);
  EXPECT_EQ(h.sup->groups().groups().find(1)->state, GroupState::created);
  // Killed by its maker's id: once the task running now ended, the group goes.
  EXPECT_FALSE(h.sup->on(TaskKill{1}));
  EXPECT_EQ(h.sup->groups().groups().find(1)->state, GroupState::created);
  h.sup->process_ended({StreamId::of_task(3), 0, pod, 0, 15, "", ""});
  EXPECT_EQ(h.sup->groups().groups().find(1)->state, GroupState::removed);
  // The one in a group it was only put in: killed, the group is left.
  EXPECT_FALSE(h.sup->on(TaskKill{2}));
  h.sup->process_ended({StreamId::of_task(2), 0, lent_pod, 0, 15, "", ""});
  h.advance(60s);
  EXPECT_EQ(h.sup->groups().groups().find(2)->state, GroupState::created);
  EXPECT_EQ(h.sup->restarts().size(), 0u);
}

// Its pod lost, a detached actor's own group has no room left to be placed
// again: its start again waits (said once) until the group is placed, as
// Ray's actor waits for its rescheduled bundle, and is not given up.
TEST(Supervisor, ADetachedTaskWhoseGroupIsPlacedAgainLaterStartsOnceItIs) {
  Head h(driver_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  int kept = 0;
  auto keep = [&] { return static_cast<ReplyId>(++kept); };
  const OwnerId maker{1};
  // Each group takes a whole pod (8 CPUs): the second pod is full too.
  ASSERT_EQ(h.sup->create_group({"own", "PACK", R"([{"CPU": 8}])", 0}, maker).code, ReplyCode::ok);
  ASSERT_EQ(h.sup->create_group({"other", "PACK", R"([{"CPU": 8}])", 0}, maker).code,
            ReplyCode::ok);
  ASSERT_FALSE(h.sup->disown(true, 1, maker));
  TaskRequest r{1, 0, "", "exec python -m atl._worker actor", {}, ""};
  r.detached = true;
  r.restarts = -1;
  r.own_group = true;
  ASSERT_FALSE(h.sup->start_task(r, keep, maker));  // task 1
  const std::string pod = h.sup->tasks().book().find(1)->record.pod;
  h.advance(60s);
  h.out.effects.clear();
  auto runs = h.out.all<effect::RunOn>();
  AgentId lost{0};
  for (int i = 0; i < 2; ++i)
    if (pod_name(i) == pod) lost = Head::agent(i);
  ASSERT_TRUE(h.sup->agent_down(lost, "connection lost"));
  EXPECT_EQ(h.sup->groups().groups().find(1)->state, GroupState::rescheduling);
  h.advance(5s);
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty()) << "no room: it waits";
  int waits = 0;
  for (const auto& line : h.out.all<Say>())
    if (line.text.find("task 1 waits for placement group 1 (RESCHEDULING)") != std::string::npos)
      ++waits;
  EXPECT_EQ(waits, 1) << "said once";
  EXPECT_EQ(h.sup->restarts().size(), 1u) << "not given up";
  EXPECT_EQ(h.sup->restarts().used(1), 0);
  // The other group goes: its pod has room, the group is placed again there
  // and the task starts in it.
  h.sup->on(GroupRemove{2});
  h.run_for(1s);
  h.advance(2s);
  ASSERT_EQ(h.sup->groups().groups().find(1)->state, GroupState::created);
  ASSERT_NE(h.sup->tasks().book().find(2), nullptr);
  EXPECT_EQ(h.sup->tasks().book().find(2)->group, 1);
  EXPECT_NE(h.sup->tasks().book().find(2)->record.pod, pod);
  EXPECT_EQ(h.sup->restarts().used(1), 1);
}

TEST(Supervisor, StopRunAndRecoverFollowTheGuidesDebugProtocol) {
  Head h(spmd_spec(2, 0));
  h.to_command(2);
  h.out.effects.clear();
  // atlctl stop: every rank is stopped; the stop is over once they all ended.
  auto stop = h.sup->begin_stop();
  ASSERT_EQ(stop.code, ReplyCode::ok) << stop.text;
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
  EXPECT_EQ(h.out.take<effect::StopRanks>().size(), 2u);
  ASSERT_EQ(h.sup->stop_state(stop.op), DebugCourse::StopWait::pending);
  h.sup->await_stop(stop.op, 11);
  h.end_ranks_on(pod_name(0), 15);
  EXPECT_TRUE(h.out.all<Answer>().empty()) << "pod 1's ranks still stop";
  h.end_ranks_on(pod_name(1), 15);
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 11u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok);
  EXPECT_EQ(h.sup->controller().restarts().used(), 0) << "a stop is no fault";
  // A second stop while stopped waits for the same one.
  EXPECT_EQ(h.sup->begin_stop().op, stop.op);

  // atlctl run -r all: one process per rank, answered once all started.
  ReplyId next = 20;
  auto keep = [&] { return ++next; };
  EXPECT_TRUE(h.sup->on(RunCommand{"all", " ", false}, keep)) << "no command";
  auto bad = h.sup->on(RunCommand{"9", "hostname", false}, keep);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, ReplyCode::usage);
  EXPECT_EQ(next, 20u) << "a refusal keeps no reply";
  ASSERT_FALSE(h.sup->on(RunCommand{"all", "hostname", false}, keep));
  EXPECT_EQ(h.sup->state(), JobState::debugCommand);
  auto runs = h.out.take<effect::RunOn>();
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    const std::string pod = h.sup->pod_of_agent(r.agent).value();
    for (const auto& p : r.order.ranks) {
      EXPECT_EQ(p.stream.kind, StreamKind::run);
      EXPECT_EQ(p.command, "hostname");
      h.sup->process_started({p.stream, p.attempt, pod, 500 + p.stream.rank});
    }
  }
  auto started = h.out.take<debug::AnswerRun>();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].reply, 21u);
  EXPECT_EQ(started[0].status.ranks.size(), 4u);
  ASSERT_FALSE(h.sup->run_now(1)) << "still running: a wait waits";
  h.sup->await_run(1, 30, 60s);
  for (const auto& r : runs)
    for (const auto& p : r.order.ranks)
      h.sup->process_ended(
          {p.stream, p.attempt, h.sup->pod_of_agent(r.agent).value(), 0, 0, "", ""});
  auto ended = h.out.take<debug::AnswerRun>();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].reply, 30u);
  EXPECT_TRUE(ended[0].status.done);
  auto folded = h.out.take<effect::StreamsEnded>();
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_EQ(folded[0].kind, StreamKind::run);
  // The run holds the job until atlctl stop, as the guide says.
  EXPECT_EQ(h.sup->state(), JobState::debugCommand);
  auto early = h.sup->on(Recover{}, keep);
  ASSERT_TRUE(early);
  EXPECT_NE(early->text.find("run atlctl stop, then atlctl recover"), std::string::npos)
      << early->text;
  auto second_stop = h.sup->begin_stop();
  ASSERT_EQ(second_stop.code, ReplyCode::ok) << second_stop.text;
  EXPECT_NE(second_stop.op, stop.op);
  EXPECT_EQ(h.sup->stop_state(second_stop.op), DebugCourse::StopWait::over) << "nothing runs";

  // atlctl recover: attempt 2 from scratch, answered once every rank started.
  ASSERT_FALSE(h.sup->on(Recover{}, keep));
  EXPECT_EQ(h.sup->state(), JobState::command);
  auto relaunched = h.start_launched();
  ASSERT_EQ(relaunched.size(), 2u);
  for (const auto& l : relaunched)
    for (const auto& p : l.order.ranks) EXPECT_EQ(p.attempt, 2);
  answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, next);
  EXPECT_EQ(answers[0].code, ReplyCode::ok) << answers[0].text;
  // The old stop's timer fires late: nothing happens.
  h.out.effects.clear();
  EXPECT_TRUE(h.sup->timer(kDebugStopTimer, stop.op));
  EXPECT_TRUE(h.out.all<Answer>().empty());
  EXPECT_EQ(h.sup->state(), JobState::command);
}

TEST(Supervisor, ADebugRunOnALostPodEndsWithItAndItsWaitIsAnswered) {
  Head h(spmd_spec(2, 0));
  h.to_debug_stop(2);
  ReplyId next = 0;
  ASSERT_FALSE(h.sup->on(RunCommand{"all", "sleep 100", true}, [&] { return ++next; }));  // run -f
  for (const auto& r : h.out.take<effect::RunOn>())
    for (const auto& p : r.order.ranks)
      h.sup->process_started({p.stream, p.attempt, h.sup->pod_of_agent(r.agent).value(), 7});
  h.out.effects.clear();
  h.sup->await_run(1, 40, 60s);
  ASSERT_TRUE(h.sup->agent_down(Head::agent(1), "connection lost"));
  EXPECT_TRUE(h.out.all<debug::AnswerRun>().empty()) << "pod 0's ranks still run";
  const DebugRun* run = h.sup->runs().find(1);
  ASSERT_NE(run, nullptr);
  std::size_t lost = 0;
  for (const auto& [rank, r] : run->ranks) lost += r.done && r.note == "pod lost";
  EXPECT_EQ(lost, 2u);
  for (std::int32_t rank : {0, 1})
    h.sup->process_ended({StreamId::of_run(1, rank), 1, pod_name(0), 0, 15, "", ""});
  auto answers = h.out.take<debug::AnswerRun>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 40u);
}

TEST(Supervisor, ABurnsAllreduceMembersAreAnsweredOnceEveryOneSaidHello) {
  Head h(spmd_spec(2, 0));
  h.to_debug_stop(2);
  ReplyId next = 0;
  auto refused = h.sup->on(NodeToolRequest{"burn", "allreduce", "10s", "", "all", "lots"},
                           [&] { return ++next; });
  ASSERT_TRUE(refused) << "'lots' is no size";
  EXPECT_EQ(refused->code, ReplyCode::usage);
  EXPECT_EQ(refused->text.rfind("--sizes: ", 0), 0u) << refused->text;
  auto burn =
      h.sup->on(NodeToolRequest{"burn", "allreduce", "10s", "", "all", ""}, [&] { return ++next; });
  ASSERT_FALSE(burn) << burn->text;
  auto runs = h.out.take<effect::RunOn>();
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    ASSERT_EQ(r.order.ranks.size(), 1u) << "one process per node";
    EXPECT_NE(r.order.ranks[0].command.find("atl-burn allreduce -d 10s"), std::string::npos)
        << r.order.ranks[0].command;
    EXPECT_TRUE(r.order.ranks[0].control);
  }
  auto deadline = h.out.take<effect::Arm>();
  EXPECT_TRUE(std::any_of(deadline.begin(), deadline.end(),
                          [](const effect::Arm& a) { return a.kind == kRunDeadlineTimer; }));
  // Each member's hello through its executor; the first is kept, unanswered.
  auto hello = [&](int index) {
    gpu::RendezvousHello m;
    m.index = index;
    m.host = "h" + std::to_string(index);
    m.transport = "tcp";
    m.address = "10.0.1." + std::to_string(index) + ":9000";
    return "rendezvous " + gpu::encode_hello(m);
  };
  const auto& first = runs[0].order.ranks[0];
  const auto& second = runs[1].order.ranks[0];
  const std::string pod_a = h.sup->pod_of_agent(runs[0].agent).value();
  const std::string pod_b = h.sup->pod_of_agent(runs[1].agent).value();
  const int index_a = pod_a == pod_name(0) ? 0 : 1;
  EXPECT_TRUE(
      h.sup->process_note({first.stream, first.attempt, pod_a, hello(index_a)}, ExecutorRef{1}));
  EXPECT_TRUE(h.out.all<effect::ControlReply>().empty());
  EXPECT_FALSE(
      h.sup->process_note({first.stream, first.attempt, pod_a, "gibberish"}, ExecutorRef{2}))
      << "answered at once";
  auto refusal = h.out.take<effect::ControlReply>();
  ASSERT_EQ(refusal.size(), 1u);
  EXPECT_EQ(refusal[0].executor, ExecutorRef{2});
  EXPECT_TRUE(h.sup->process_note({second.stream, second.attempt, pod_b, hello(1 - index_a)},
                                  ExecutorRef{3}));
  auto replies = h.out.take<effect::ControlReply>();
  ASSERT_EQ(replies.size(), 2u);
  std::set<std::int64_t> to;
  for (const auto& r : replies) {
    to.insert(r.executor.value);
    auto reply = gpu::decode_reply(r.line);
    ASSERT_TRUE(reply) << r.line;
    EXPECT_TRUE(reply->error.empty()) << reply->error;
  }
  EXPECT_EQ(to, (std::set<std::int64_t>{1, 3}));
}

}  // namespace
}  // namespace atl::supervisor
