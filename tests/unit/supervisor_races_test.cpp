// The head's races in fake time, each once a reported defect: a pod lost
// between the last join and the checks, reports of an earlier attempt, two
// operators at once, waits outlived by the job, a lost pod in debugStop or
// in command, a spent budget, taints by check, GPU loss and repeated loss,
// burns' figures and deadlines, the debug protocol's operation ids (issue
// 24), the bounded history of runs. Through the Supervisor's inputs and its
// outbox only (no CAF, no processes, no sleeps); the CAF wiring of the same
// messages is tests/actors/supervisor_races_test.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "atl/supervisor/status_view.hpp"
#include "supervisor_fixture.hpp"

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using namespace fixture;

// One rank per pod, as the guide's smallest jobs.
JobSpec one_rank_pods(int workers, int max_restarts = 3) {
  JobSpec spec = spmd_spec(workers, 0);
  spec.nproc_per_node = 1;
  spec.max_restarts = max_restarts;
  return spec;
}

// The job ended: every agent told (its code), each leaves, the outcome handed over.
std::optional<int> settle(Head& h, std::vector<std::int32_t>* codes = nullptr) {
  for (const auto& s : h.out.take<effect::Shutdown>()) {
    if (codes) codes->push_back(s.order.code);
    h.sup->agent_down(s.agent, "it left");
  }
  auto released = h.out.take<effect::Release>();
  if (released.empty()) return std::nullopt;
  return released[0].outcome;
}

void rank_ended(Head& h, int rank, int attempt, int code, int signal = 0) {
  h.sup->process_ended(
      {user_code_stream(rank), attempt, h.sup->pod_of_rank(rank), code, signal, "", ""});
}

std::string taints(Head& h) { return taint_command(*h.sup, "list", "").text; }

// A pod that comes back: a new agent for the same pod, on the same node.
void rejoin(Head& h, int pod, std::int64_t agent) {
  ASSERT_TRUE(h.sup->join(h.info(pod), AgentId{agent}).joined());
  for (std::size_t i = 0; i < h.out.take<effect::CheckSoon>().size(); ++i) h.sup->all_in();
}

TEST(SupervisorRaces, APodLostBetweenTheLastJoinAndTheChecksFailsTheJobBeforeAnyLaunch) {
  Head h(one_rank_pods(2));
  h.join(2);
  ASSERT_EQ(h.out.take<effect::CheckSoon>().size(), 1u);
  h.sup->agent_down(Head::agent(0), "it was killed");  // before the check message came
  h.sup->all_in();
  h.pass_preflight();
  EXPECT_TRUE(h.out.all<effect::Launch>().empty()) << "nothing starts on half a cluster";
  std::vector<std::int32_t> codes;
  EXPECT_EQ(settle(h, &codes), 1);
  EXPECT_EQ(codes, std::vector<std::int32_t>{1});
}

TEST(SupervisorRaces, ReportsOfAnEarlierAttemptAreHistory) {
  Head h(one_rank_pods(2));
  h.to_command(2);
  rank_ended(h, 0, 0, 0, 9);  // attempt 0's failure, late
  EXPECT_EQ(h.sup->state(), JobState::command);
  rank_ended(h, 0, 1, 0);
  rank_ended(h, 1, 1, 0);
  EXPECT_EQ(settle(h), 0) << "succeeded: the stale failure did not count";
}

TEST(SupervisorRaces, TwoOperatorsStoppingAtOnceAreBothAnswered) {
  Head h(one_rank_pods(1));
  h.to_command(1);
  auto first = h.sup->begin_stop();
  auto second = h.sup->begin_stop();
  EXPECT_EQ(first.op, second.op) << "the second waits for the same stop";
  h.sup->await_stop(first.op, 1);
  h.sup->await_stop(second.op, 2);
  rank_ended(h, 0, 1, 0, 15);  // by SIGTERM: a stop, not a failure
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 2u);
  for (const auto& a : answers) EXPECT_EQ(a.code, ReplyCode::ok);
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
}

TEST(SupervisorRaces, AnOperatorWaitingWhenTheJobEndsIsAnsweredNotDropped) {
  Head h(one_rank_pods(1));
  h.to_command(1);
  auto stop = h.sup->begin_stop();
  h.sup->await_stop(stop.op, 5);
  h.sup->cancel("SIGTERM");  // the head is told to end before the rank reports
  rank_ended(h, 0, 1, 0, 15);
  EXPECT_EQ(settle(h), 1);
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 5u);
  EXPECT_EQ(answers[0].code, ReplyCode::failed) << "the job ended first";
}

TEST(SupervisorRaces, APodLostInDebugStopIsAwaitedAndComesBackUnused) {
  Head h(one_rank_pods(1));
  h.to_command(1);
  auto stop = h.sup->begin_stop();
  h.sup->await_stop(stop.op, 5);
  h.sup->agent_down(Head::agent(0), "it was killed");
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok) << "its ranks are gone with it: stopped";
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
  rejoin(h, 0, 10);
  h.pass_preflight();
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
  EXPECT_TRUE(h.out.all<effect::Launch>().empty());
}

TEST(SupervisorRaces, APodLostInCommandRestartsTheJobOnceItIsBack) {
  Head h(one_rank_pods(2));
  h.to_command(2);
  h.out.effects.clear();
  h.sup->agent_down(Head::agent(0), "it was killed");
  EXPECT_EQ(h.sup->state(), JobState::restarting);
  ASSERT_EQ(h.out.take<effect::StopRanks>().size(), 1u) << "the survivor's ranks are stopped";
  rank_ended(h, 1, 1, 0, 15);
  EXPECT_EQ(h.sup->state(), JobState::restarting) << "no relaunch while pod 0 is missing";
  EXPECT_TRUE(h.out.all<effect::Launch>().empty());
  rejoin(h, 0, 10);
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  auto launches = h.start_launched();
  ASSERT_EQ(launches.size(), 2u);
  for (const auto& l : launches) {
    const auto& env = l.order.ranks.at(0).env;
    EXPECT_EQ(std::count(env.begin(), env.end(), "ATL_RESTART_COUNT=1"), 1);
  }
  rank_ended(h, 1, 1, 0, 9);  // attempt 1 is history
  EXPECT_EQ(h.sup->state(), JobState::command);
  rank_ended(h, 0, 2, 0);
  rank_ended(h, 1, 2, 0);
  EXPECT_EQ(settle(h), 0);
}

TEST(SupervisorRaces, ASpentBudgetFailsTheJobListingEveryAttempt) {
  Head h(one_rank_pods(1, /*max_restarts=*/1));
  h.to_command(1);
  h.sup->agent_down(Head::agent(0), "it was killed");
  EXPECT_EQ(h.sup->state(), JobState::restarting);
  rejoin(h, 0, 10);
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  h.sup->agent_down(AgentId{10}, "it was killed");
  EXPECT_EQ(settle(h), 1);
  EXPECT_EQ(h.sup->controller().restarts().attempt_lines().size(), 2u);
}

TEST(SupervisorRaces, APodLostTwiceIsNotTaintedWhenNoSpareCouldReplaceIt) {
  Head h(one_rank_pods(1, 10));
  h.to_command(1);
  std::int64_t agent = Head::agent(0).value;
  for (int round = 0; round < 2; ++round) {
    h.sup->agent_down(AgentId{agent}, "it was killed");
    EXPECT_EQ(h.sup->state(), JobState::restarting);
    rejoin(h, 0, ++agent + 10);
    agent += 10;
    h.pass_preflight();
    ASSERT_EQ(h.sup->state(), JobState::command) << round;
  }
  EXPECT_EQ(taints(h), "[]");
}

NodeInfo gpu_pod(const Head& h) {
  NodeInfo info = h.info(0);
  info.machine = "gpu-node";
  info.gpus = 2;
  return info;
}

TEST(SupervisorRaces, APodWhoseGpuDisappearsIsTaintedAndTheJobRestartsWithoutIt) {
  Head h(one_rank_pods(1, 10));
  ASSERT_TRUE(h.sup->join(gpu_pod(h), Head::agent(0)).joined());
  h.sup->all_in();
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  h.sup->on(PodHeartbeat{pod_name(0), 2});  // all there
  EXPECT_EQ(h.sup->state(), JobState::command);
  h.sup->on(PodHeartbeat{pod_name(0), 1});  // one gone
  EXPECT_EQ(h.sup->state(), JobState::restarting);
  const std::string list = taints(h);
  EXPECT_NE(list.find("\"node\":\"gpu-node\""), std::string::npos) << list;
  EXPECT_NE(list.find("lost a GPU (it declared 2, 1 are there)"), std::string::npos) << list;
}

TEST(SupervisorRaces, APodsGpuFaultTaintsItsMachineAndTheJobRestartsWithoutIt) {
  Head h(one_rank_pods(1, 10));
  ASSERT_TRUE(h.sup->join(gpu_pod(h), Head::agent(0)).joined());
  h.sup->all_in();
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  h.out.effects.clear();
  h.sup->on(PodGpuFault{pod_name(0), "Xid 79 (GPU has fallen off the bus)", 79});
  EXPECT_EQ(h.sup->state(), JobState::restarting);
  const std::string list = taints(h);
  EXPECT_NE(list.find("\"node\":\"gpu-node\""), std::string::npos) << list;
  EXPECT_NE(list.find("Xid 79"), std::string::npos) << list;
  EXPECT_EQ(h.out.all<effect::Delete>().size(), 1u) << "its pod is deleted: it cannot be trusted";
}

// Recreated on the machine whose GPU went (still tainted) while the job is
// parked, the pod stays, quarantined; it was removed on its first heartbeat,
// recreated, removed... every second, for ever.
TEST(SupervisorRaces, APodBackOnANodeThatLostAGpuIsNotRemovedAgainWhileParked) {
  Head h(one_rank_pods(1, 10));
  ASSERT_TRUE(h.sup->join(gpu_pod(h), Head::agent(0)).joined());
  h.sup->all_in();
  h.pass_preflight();
  h.start_launched();
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  rank_ended(h, 0, 1, 0, 15);
  ASSERT_EQ(h.sup->state(), JobState::debugStop);
  h.sup->on(PodHeartbeat{pod_name(0), 1});  // one GPU gone
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
  ASSERT_TRUE(h.sup->join(gpu_pod(h), AgentId{10}).joined());  // recreated, on the same machine
  h.out.effects.clear();
  h.sup->on(PodHeartbeat{pod_name(0), 1});
  EXPECT_TRUE(h.out.all<effect::Delete>().empty());
  EXPECT_TRUE(h.sup->pods().registry().joined(pod_name(0)));
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
}

// The job in debugStop with its one rank stopped: the guide's operator.
void parked(Head& h) {
  h.to_command(1);
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  rank_ended(h, 0, 1, 0, 15);
  ASSERT_EQ(h.sup->state(), JobState::debugStop);
  h.out.effects.clear();
}

ReplyId kept = 0;
ReplyId keep() { return ++kept; }

TEST(SupervisorRaces, ANodeThatFailsAtlctlCheckIsTaintedByThePlatform) {
  Head h(one_rank_pods(1));
  parked(h);
  ASSERT_FALSE(h.sup->on(NodeToolRequest{"check", "check", "1ms", "", "all", ""}, keep));
  h.sup->process_ended({StreamId::of_run(1, 0), 1, pod_name(0), 1, 0, "", ""});
  const std::string list = taints(h);
  EXPECT_NE(list.find("\"node\":\"node-0\""), std::string::npos) << list;
  EXPECT_NE(list.find("\"source\":\"platform\""), std::string::npos) << list;
  EXPECT_NE(list.find("failed atlctl check"), std::string::npos) << list;
}

TEST(SupervisorRaces, ABurnsRoundFiguresAreKeptWithItsRun) {
  Head h(one_rank_pods(1));
  parked(h);
  ASSERT_FALSE(h.sup->on(NodeToolRequest{"burn", "gemm", "1s", "", "all", ""}, keep));
  h.sup->process_started({StreamId::of_run(1, 0), 1, pod_name(0), 42});
  for (const char* line : {"figure 0 gemm_tflops 600.5 round=1", "figure 0 gemm_tflops 610 round=2",
                           "figure 0 gemm_tflops 605.25", "figure 0 joules 1 round=3"})
    h.sup->process_note({StreamId::of_run(1, 0), 1, pod_name(0), line}, ExecutorRef{1});
  auto started = h.out.take<debug::AnswerRun>();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].code, ReplyCode::ok);
  auto figures = run_figures(*h.sup, 1);
  ASSERT_EQ(figures.code, ReplyCode::ok);
  auto j = nlohmann::json::parse(figures.text);
  ASSERT_EQ(j["figures"].size(), 2u) << "rounds only: the average goes to the metrics";
  EXPECT_EQ(j["figures"][0]["value"], 600.5);
  EXPECT_EQ(j["figures"][1]["round"], 2);
  EXPECT_EQ(j["figures_dropped"], 0);
  auto average = h.sup->burn_figures().find({pod_name(0), 0, "gemm_tflops", ""});
  ASSERT_NE(average, h.sup->burn_figures().end());
  EXPECT_EQ(average->second, 605.25) << "the whole burn's average, for the metrics";
}

TEST(SupervisorRaces, ABurnThatOutlivesItsDeadlineIsStoppedAndSaysWhy) {
  Head h(one_rank_pods(1));
  parked(h);
  ASSERT_FALSE(h.sup->on(NodeToolRequest{"burn", "gemm", "1s", "", "all", ""}, keep));
  ASSERT_EQ(h.out.take<effect::RunOn>().size(), 1u);
  h.sup->process_started({StreamId::of_run(1, 0), 1, pod_name(0), 42});
  // 1 s of burn + atl-burn's 60 s watchdog + 30 s grace: nothing before that.
  h.advance(90s);
  EXPECT_TRUE(h.out.all<effect::StopStream>().empty());
  h.advance(2s);
  auto stops = h.out.take<effect::StopStream>();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].order.stream, StreamId::of_run(1, 0));
  auto now = h.sup->run_now(1);
  ASSERT_FALSE(now) << "stopped, not yet ended: a wait waits";
  h.sup->await_run(1, 77, 1ms);
  h.advance(1ms);
  std::string deadlines;
  for (const auto& a : h.out.take<debug::AnswerRun>()) deadlines += a.status.deadline + "\n";
  EXPECT_NE(deadlines.find("burn -t gemm -d 1s ran past its deadline of 91s and was stopped"),
            std::string::npos)
      << deadlines;
}

TEST(SupervisorRaces, ABurnsSizesAndDurationsAreCheckedByTheSupervisorToo) {
  Head h(one_rank_pods(1));
  parked(h);
  for (const auto& [tools, sizes] : std::vector<std::pair<std::string, std::string>>{
           {"gemm", "8M"}, {"allreduce", "8M:1M"}, {"allreduce", "1X"}, {"local", "2"}}) {
    auto refused = h.sup->on(NodeToolRequest{"burn", tools, "1s", "", "all", sizes}, keep);
    ASSERT_TRUE(refused) << tools << " " << sizes;
    EXPECT_EQ(refused->code, ReplyCode::usage) << refused->text;
  }
  // Any client may send the duration: only a duration is taken.
  for (const char* duration : {"1s; touch /tmp/pwned", "0s", "", "5x"}) {
    auto refused = h.sup->on(NodeToolRequest{"burn", "gemm", duration, "", "all", ""}, keep);
    ASSERT_TRUE(refused) << duration;
    EXPECT_EQ(refused->code, ReplyCode::usage) << refused->text;
  }
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty()) << "nothing started";
  EXPECT_EQ(h.sup->state(), JobState::debugStop);
}

// Recover #1 armed a 30 s start timer; a stop and recover #2 followed within
// it. The leftover timer failed recover #2 ("ranks 0 did not start within
// 30s") before recovers were tagged with their attempt.
TEST(SupervisorRaces, TheStartTimerOfAnEarlierRecoverDoesNotFailALaterOne) {
  Head h(one_rank_pods(1));
  parked(h);
  ASSERT_FALSE(h.sup->on(Recover{}, keep));
  h.start_launched();
  ASSERT_EQ(h.out.take<Answer>().size(), 1u);
  h.advance(9s);
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  rank_ended(h, 0, 2, 0, 15);
  ASSERT_FALSE(h.sup->on(Recover{}, keep));  // recover #2: attempt 3, its rank not started yet
  h.advance(21s);                            // recover #1's timer is due now
  EXPECT_TRUE(h.out.all<Answer>().empty()) << "recover #2 still waits for its rank";
  h.start_launched();
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok) << answers[0].text;
  EXPECT_EQ(h.sup->state(), JobState::command);
}

// Operator A stops, the ranks end, operator B recovers, and only then A's
// atlctl asks stop_wait: A's stop is over, whatever B did since.
TEST(SupervisorRaces, AStopWaitAfterARecoverByAnotherOperatorAnswersAtOnce) {
  Head h(one_rank_pods(1));
  h.to_command(1);
  auto stop = h.sup->begin_stop();
  rank_ended(h, 0, 1, 0, 15);
  ASSERT_FALSE(h.sup->on(Recover{}, keep));
  h.start_launched();
  EXPECT_EQ(h.sup->stop_state(stop.op), DebugCourse::StopWait::over);
  EXPECT_EQ(h.sup->stop_state(99), DebugCourse::StopWait::unknown) << "never was: usage";
  EXPECT_EQ(h.sup->state(), JobState::command);
}

// atlctl stop returns once the ranks ended; but run/check sent while they
// are still in their grace (saving a checkpoint, holding the GPUs) wait.
TEST(SupervisorRaces, RunAndCheckAreRefusedWhileStoppedRanksAreStillInTheirGrace) {
  Head h(one_rank_pods(1));
  h.to_command(1);
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  auto run = h.sup->on(RunCommand{"all", "nvidia-smi", false}, keep);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->code, ReplyCode::refused);
  EXPECT_NE(run->text.find("ranks 0 are still stopping (in their grace)"), std::string::npos)
      << run->text;
  auto check = h.sup->on(NodeToolRequest{"check", "check", "1ms", "", "all", ""}, keep);
  ASSERT_TRUE(check);
  EXPECT_EQ(check->code, ReplyCode::refused);
  EXPECT_TRUE(h.out.all<effect::RunOn>().empty());
  rank_ended(h, 0, 1, 0, 15);  // the grace is over
  EXPECT_FALSE(h.sup->on(RunCommand{"all", "nvidia-smi", false}, keep));
  EXPECT_EQ(h.out.take<effect::RunOn>().size(), 1u);
}

// `atlctl check & sleep 0.4; atlctl stop`: the check's processes end by
// SIGTERM. That is no verdict: no node is tainted, and recover goes on.
TEST(SupervisorRaces, ACheckStoppedByAnOperatorTaintsNoNodeAndRecoverGoesOn) {
  Head h(one_rank_pods(1));
  parked(h);
  ASSERT_FALSE(h.sup->on(NodeToolRequest{"check", "check", "1ms", "", "all", ""}, keep));
  h.sup->process_started({StreamId::of_run(1, 0), 1, pod_name(0), 77});
  ASSERT_EQ(h.out.take<debug::AnswerRun>().size(), 1u);
  ASSERT_EQ(h.sup->state(), JobState::debugCommand);
  auto stop = h.sup->begin_stop();
  h.sup->process_ended({StreamId::of_run(1, 0), 1, pod_name(0), 0, 15, "", ""});
  EXPECT_EQ(h.sup->stop_state(stop.op), DebugCourse::StopWait::over);
  EXPECT_EQ(taints(h), "[]");
  ASSERT_FALSE(h.sup->on(Recover{}, keep));
  h.start_launched();
  auto answers = h.out.take<Answer>();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok) << answers[0].text;
}

// Ended debug runs are a bounded history: the oldest beyond --history are
// dropped (their streams forgotten by the sink), and a wait on one says so.
TEST(SupervisorRaces, EndedDebugRunsBeyondTheHistoryAreDroppedAndSaySo) {
  JobSpec spec = one_rank_pods(1);
  Head h(spec, /*finished_kept=*/2);
  parked(h);
  for (std::int32_t run = 1; run <= 3; ++run) {
    ASSERT_FALSE(h.sup->on(RunCommand{"all", "true", false}, keep)) << run;
    h.sup->process_started({StreamId::of_run(run, 0), run, pod_name(0), 10 + run});
    h.sup->process_ended({StreamId::of_run(run, 0), run, pod_name(0), 0, 0, "", ""});
    ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  }
  EXPECT_EQ(h.out.take<effect::RunOn>().size(), 3u);
  auto forgotten = h.out.take<effect::ForgetStreams>();
  ASSERT_EQ(forgotten.size(), 1u);
  EXPECT_EQ(forgotten[0].kind, StreamKind::run);
  EXPECT_EQ(forgotten[0].ids, std::vector<std::int32_t>{1});
  auto dropped = h.sup->run_now(1);
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->code, ReplyCode::failed);
  EXPECT_NE(dropped->text.find("run 1 ended and its record was dropped"), std::string::npos);
  auto kept_run = h.sup->run_now(2);
  ASSERT_TRUE(kept_run);
  EXPECT_EQ(kept_run->code, ReplyCode::ok);
  EXPECT_EQ(kept_run->status.run, 2);
  EXPECT_TRUE(kept_run->status.done);
  ASSERT_EQ(kept_run->status.ranks.size(), 1u);
  EXPECT_EQ(kept_run->status.ranks[0].pid, 12);
  EXPECT_EQ(h.sup->run_now(4)->code, ReplyCode::usage) << "never was";
}

}  // namespace
}  // namespace atl::supervisor
