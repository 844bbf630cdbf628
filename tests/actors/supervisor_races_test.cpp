// The JobSupervisor's CAF wiring under CAF's deterministic scheduler: one
// case per interface and per kind of effect (a join and its check message,
// process reports, atlctl's stop/stop_wait, delete, check/burn and taint
// list, figures, timers and long polls, the sink's forgotten streams, a
// GPU heartbeat, an agent going down, an exception in a handler), played
// message by message. Fake agents and a fake sink stand in for the other
// processes; the supervisor is the real one. The same races on the
// Supervisor alone, in fake time: tests/unit/supervisor_races_test.cpp.
#define CAF_SUITE supervisor_races
#include <algorithm>
#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>
#include <future>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/job_supervisor.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/log_stream.hpp"

using namespace atl;

namespace {

struct RaceConfig : caf::actor_system_config {
  RaceConfig() { add_atl_message_types(*this); }
};

// What a fake node agent was told.
struct AgentLog {
  int launches = 0;
  int stops = 0;
  std::vector<std::int32_t> shutdowns;
  std::vector<std::string> last_env;
  int runs = 0;
  std::vector<std::int32_t> run_stops;  // debug runs it was told to stop
};

caf::behavior fake_agent(caf::event_based_actor* self, std::shared_ptr<AgentLog> log) {
  return {
      [](const PreflightRequest& r) {
        return PreflightReply{{}, r.step == PreflightRequest::probe ? 40000 : 0};
      },
      [log](const agent_order::Launch& order) {
        ++log->launches;
        if (!order.ranks.empty()) log->last_env = order.ranks.front().env;
      },
      [](heartbeat_atom) {},
      [log](const agent_order::Run&) { ++log->runs; },
      [self](const agent_order::Fence&) { self->quit(); },
      [self](const agent_order::Delete&) { self->quit(); },
      [log](const agent_order::StopRanks&) { ++log->stops; },
      [log](const agent_order::StopStream& order) { log->run_stops.push_back(order.stream.run); },
      [self, log](const agent_order::Shutdown& order) {
        log->shutdowns.push_back(order.code);
        self->quit();
      },
  };
}

// What the fake sink was told to forget: (stream kind, ids) each time.
using Forgotten = std::vector<std::pair<std::int32_t, std::vector<std::int32_t>>>;

caf::behavior fake_sink(std::shared_ptr<Forgotten> forgotten) {
  return {
      [](watch_atom) {},
      [](const sink_order::Print&) {},
      [](const sink_order::NewAttempt&) {},
      [forgotten](const sink_order::ForgetStreams& order) {
        forgotten->emplace_back(static_cast<std::int32_t>(order.kind), order.ids);
      },
      [](const sink_order::KeepFile&) {},
      [](const sink_order::StreamsEnded&) {},
  };
}

struct fixture : test_coordinator_fixture<RaceConfig> {
  std::shared_ptr<std::promise<int>> outcome = std::make_shared<std::promise<int>>();
  std::future<int> result = outcome->get_future();
  std::shared_ptr<Forgotten> forgotten = std::make_shared<Forgotten>();
  caf::actor sink = sys.spawn(fake_sink, forgotten);
  caf::actor sup;
  std::size_t history = 10000;   // SupervisorConfig::finished_kept
  std::vector<JoinReply> joins;  // the answers to registrations, as status() drains them

  // The supervisor's heartbeat tick re-arms itself: the base fixture's final
  // run() (timers included) would never end while it lives.
  ~fixture() override {
    if (sup) caf::anon_send_exit(sup, caf::exit_reason::kill);
    sched.run();
  }

  // Every queued message, but no timer: time stands still unless a test moves it.
  void step() { sched.run(); }

  void start(int workers, bool throw_on_info = false, int max_restarts = 10) {
    JobSpec job;
    job.max_restarts = max_restarts;
    // The detector reads the real clock; these tests play messages, not time.
    job.heartbeat = {std::chrono::minutes(10), std::chrono::hours(1)};
    job.job_id = "jo-race";
    job.entrypoint = "true";
    job.workers = workers;
    SupervisorConfig config;
    config.settings.job = job;
    config.settings.advertised_host = "127.0.0.1";
    config.settings.finished_kept = history;
    config.sink = sink;
    config.outcome = outcome;
    config.testing_throw_on_info = throw_on_info;
    sup = spawn_job_supervisor(sys, std::move(config));
    self->send(sup, start_atom::value, std::uint16_t{1});
    step();
  }

  std::pair<caf::actor, std::shared_ptr<AgentLog>> agent() {
    auto log = std::make_shared<AgentLog>();
    return {sys.spawn(fake_agent, log), log};
  }

  void join(int index, const caf::actor& a) {
    NodeInfo info;
    info.pod = worker_pod_name("jo-race", index);
    info.address = "127.0.0.1";
    info.machine = "node-" + std::to_string(index);
    self->send(sup, register_atom::value, info, a);
  }

  // The supervisor's answer to status (registration answers, also strings,
  // are taken out of the mailbox first).
  std::string status() {
    for (bool more = true; more;)
      self->receive([](const std::string&) {},
                    [&](const JoinReply& reply) { joins.push_back(reply); },
                    caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
    self->send(sup, status_atom::value);
    step();
    std::string out = "(no answer)";
    self->receive([&](const std::string& s) { out = s; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  bool settled(int expected) {
    if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    return result.get() == expected;
  }

  // A two-worker job, both joined (and launched): the agents and their logs.
  std::tuple<caf::actor, std::shared_ptr<AgentLog>, caf::actor, std::shared_ptr<AgentLog>>
  two_joined() {
    start(2);
    auto [a0, log0] = agent();
    auto [a1, log1] = agent();
    join(0, a0);
    join(1, a1);
    step();
    return {a0, log0, a1, log1};
  }

  // A one-worker job whose only rank runs (attempt 1): its agent and log.
  std::pair<caf::actor, std::shared_ptr<AgentLog>> one_rank_started() {
    start(1);
    auto [a0, log0] = agent();
    join(0, a0);
    step();
    rank_started(0, 1);
    step();
    return {a0, log0};
  }
  caf::actor one_rank_running() { return one_rank_started().first; }

  // One rank ran and was stopped by `op` (atlctl stop): the job is parked in
  // debugStop, ready for run/check/burn. The stop's answer is taken.
  std::shared_ptr<AgentLog> one_rank_parked(caf::scoped_actor& op) {
    auto log0 = one_rank_started().second;
    op->send(sup, debug_stop_atom::value);
    step();
    rank_exit(0, 1, 143);
    step();
    op->receive([](std::int32_t, const std::string&, std::int32_t) {},
                caf::after(std::chrono::seconds(0)) >> [] {});
    return log0;
  }

  // `op` runs atlctl stop while rank 0 of attempt 1 runs; the rank ends.
  void park_rank_zero(caf::scoped_actor& op) {
    op->send(sup, debug_stop_atom::value);
    step();
    rank_exit(0, 1, 143);
    step();
  }

  // dbg_stop as atlctl sends it: the stop's id from its answer (0: refused).
  std::int32_t begin_stop(caf::scoped_actor& op) {
    op->send(sup, debug_stop_atom::value);
    step();
    std::int32_t id = 0;
    op->receive(
        [&](std::int32_t code, const std::string&, std::int32_t op) { id = code == 0 ? op : 0; },
        caf::after(std::chrono::seconds(0)) >> [] {});
    return id;
  }

  // atlctl stop as it asks: dbg_stop, then stop_wait for that stop (whose
  // answer stays in op's mailbox).
  void stop_and_wait(caf::scoped_actor& op) {
    std::int32_t id = begin_stop(op);
    op->send(sup, StopWait{id});
    step();
  }

  // The next answer waiting in `op`'s mailbox, code and text ((-1, "") when none).
  std::pair<std::int32_t, std::string> next_answer(caf::scoped_actor& op) {
    std::pair<std::int32_t, std::string> out{-1, ""};
    op->receive(
        [&](std::int32_t c, const std::string& t) {
          out = {c, t};
        },
        [&](std::int32_t c, const std::string& t, const RunStatus&) {
          out = {c, t};
        },
        caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  // The exit codes of the answers waiting in `op`'s mailbox (at most `n`).
  std::vector<std::int32_t> answers(caf::scoped_actor& op, int n) {
    std::vector<std::int32_t> codes;
    for (int i = 0; i < n; ++i)
      op->receive(
          [&](std::int32_t code, const std::string&) { codes.push_back(code); },
          [&](std::int32_t code, const std::string&, const RunStatus&) { codes.push_back(code); },
          caf::after(std::chrono::seconds(0)) >> [] {});
    return codes;
  }

  // Pod 0 on machine "gpu-node", declaring two GPUs.
  static NodeInfo gpu_pod() {
    NodeInfo info;
    info.pod = worker_pod_name("jo-race", 0);
    info.address = "127.0.0.1";
    info.machine = "gpu-node";
    info.gpus = 2;
    return info;
  }

  void rank_exit(int rank, int attempt, int code) {
    self->send(sup, ProcessExit{StreamId::of_rank(rank), attempt, worker_pod_name("jo-race", rank),
                                code, 0, "", ""});
  }
  void rank_started(int rank, int attempt) {
    self->send(sup, ProcessStarted{StreamId::of_rank(rank), attempt,
                                   worker_pod_name("jo-race", rank), 100 + rank});
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(supervisor_races, fixture)

CAF_TEST(a node lost between the last registration and the checks fails the job) {
  start(2);
  auto [a0, log0] = agent();
  auto [a1, log1] = agent();
  join(0, a0);
  step();
  join(1, a1);
  // Only the registration: the supervisor has queued its own check message.
  sched.run_once();
  anon_send_exit(a0, caf::exit_reason::kill);
  step();
  CAF_CHECK(settled(1));               // failed (and, with no --linger, the supervisor is gone)
  CAF_CHECK_EQUAL(log1->launches, 0);  // nothing started on a half cluster
  CAF_REQUIRE_EQUAL(log1->shutdowns.size(), 1u);
  CAF_CHECK_EQUAL(log1->shutdowns[0], 1);
}

CAF_TEST(reports of an earlier attempt are history) {
  auto [a0, log0, a1, log1] = two_joined();
  CAF_CHECK_EQUAL(status(), "command");
  // Each joined agent was told, in the join's answer, where its processes'
  // output (the sink) and its own log lines (pod-worker-<i>) go.
  CAF_REQUIRE_EQUAL(joins.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    CAF_CHECK(joins[i].terms.joined());
    CAF_CHECK_EQUAL(joins[i].terms.log_stream, StreamId::pod_log(i));
    CAF_CHECK(joins[i].sink == sink);
  }
  CAF_CHECK_EQUAL(log0->launches, 1);
  rank_started(0, 1);
  rank_started(1, 1);
  // A failure report from attempt 0 (before a recover) must not fail attempt 1.
  rank_exit(0, 0, 9);
  step();
  CAF_CHECK_EQUAL(status(), "command");
  rank_exit(0, 1, 0);
  rank_exit(1, 1, 0);
  step();
  CAF_CHECK(settled(0));  // succeeded: the stale failure did not count
}

CAF_TEST(a pods batch of reports counts those about itself and no other pod) {
  // A node agent's ProcessReports: rank 0's start and end from its own pod
  // count; what it says of pod 1's rank (a failure) does not.
  auto [a0, log0, a1, log1] = two_joined();
  const std::string pod0 = worker_pod_name("jo-race", 0), pod1 = worker_pod_name("jo-race", 1);
  self->send(sup, ProcessReports{pod0,
                                 {ProcessStarted{StreamId::of_rank(0), 1, pod0, 100},
                                  ProcessStarted{StreamId::of_rank(1), 1, pod1, 101}},
                                 {ProcessExit{StreamId::of_rank(0), 1, pod0, 0, 0, "", ""},
                                  ProcessExit{StreamId::of_rank(1), 1, pod1, 9, 0, "", ""}}});
  step();
  CAF_CHECK_EQUAL(status(), "command");  // rank 1's "failure" was not its pod's word
  rank_started(1, 1);
  rank_exit(1, 1, 0);
  step();
  CAF_CHECK(settled(0));  // rank 0's end came in the batch
}

CAF_TEST(two operators stopping at once both get an answer) {
  auto a0 = one_rank_running();
  caf::scoped_actor op1{sys, true};
  caf::scoped_actor op2{sys, true};
  std::int32_t id1 = begin_stop(op1);
  std::int32_t id2 = begin_stop(op2);
  CAF_CHECK_EQUAL(id1, 1);
  CAF_CHECK_EQUAL(id2, 1);  // the second waits for the same stop
  CAF_CHECK_EQUAL(status(), "debugStop");
  op1->send(sup, StopWait{id1});
  op2->send(sup, StopWait{id2});
  step();
  rank_exit(0, 1, 143);  // the rank ends by SIGTERM: a stop, not a failure
  step();
  int answered = 0;
  for (auto* op : {&op1, &op2})
    (*op)->receive([&](std::int32_t code, const std::string&) { answered += code == 0; },
                   caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK_EQUAL(answered, 2);
  CAF_CHECK_EQUAL(status(), "debugStop");
}

CAF_TEST(an operator waiting when the job ends is answered and not dropped) {
  auto a0 = one_rank_running();
  caf::scoped_actor op{sys, true};
  stop_and_wait(op);
  // The head is told to end (SIGTERM) before the rank reports: the job fails,
  // and the wait ends with the job's end, not never.
  self->send(sup, cancel_atom::value, std::string("SIGTERM"));
  step();
  rank_exit(0, 1, 143);
  step();
  auto codes = answers(op, 1);
  CAF_REQUIRE_EQUAL(codes.size(), 1u);
  CAF_CHECK_EQUAL(codes[0], 1);  // the wait: the job ended first
  CAF_CHECK(settled(1));
}

CAF_TEST(a lost node in command restarts the job once its pod is back) {
  auto [a0, log0, a1, log1] = two_joined();
  rank_started(0, 1);
  rank_started(1, 1);
  step();
  anon_send_exit(a0, caf::exit_reason::kill);
  step();
  CAF_CHECK_EQUAL(status(), "restarting");
  CAF_CHECK_EQUAL(log1->stops, 1);  // the survivor's ranks are stopped
  // A late report of the old attempt from the survivor ends it; no relaunch
  // while pod 0 is missing.
  rank_exit(1, 1, 143);
  step();
  CAF_CHECK_EQUAL(status(), "restarting");
  CAF_CHECK_EQUAL(log1->launches, 1);
  auto [b0, logb] = agent();
  join(0, b0);
  step();
  CAF_CHECK_EQUAL(status(), "command");
  CAF_CHECK_EQUAL(logb->launches, 1);
  CAF_CHECK_EQUAL(log1->launches, 2);
  CAF_REQUIRE_EQUAL(logb->last_env.empty(), false);
  CAF_CHECK(std::count(logb->last_env.begin(), logb->last_env.end(), "ATL_RESTART_COUNT=1") == 1);
  // Attempt 1's reports are history now; attempt 2 decides.
  rank_exit(1, 1, 9);
  step();
  CAF_CHECK_EQUAL(status(), "command");
  rank_exit(0, 2, 0);
  rank_exit(1, 2, 0);
  step();
  CAF_CHECK(settled(0));
}

CAF_TEST(delete refuses an unknown pod and changes nothing) {
  auto a0 = one_rank_running();
  caf::scoped_actor op{sys, true};
  op->send(sup, DeletePods{"jo-race-worker-0,jo-race-worker-7"});
  step();
  auto [code, text] = next_answer(op);
  CAF_CHECK_EQUAL(code, 2);
  CAF_CHECK(text.find("jo-race-worker-7") != std::string::npos);
  CAF_CHECK_EQUAL(status(), "command");
  op->send(sup, DeletePods{"jo-race-worker-0"});
  step();
  op->receive([&](std::int32_t c, const std::string&) { code = c; },
              caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK_EQUAL(code, 0);
  CAF_CHECK_EQUAL(status(), "restarting");
}

CAF_TEST(an exception in a handler fails the job and shuts the workers down) {
  start(1, /*throw_on_info=*/true);
  auto [a0, log0] = agent();
  join(0, a0);
  step();
  self->send(sup, info_atom::value);
  step();
  CAF_CHECK(settled(1));
  CAF_REQUIRE_EQUAL(log0->shutdowns.size(), 1u);
  CAF_CHECK_EQUAL(log0->shutdowns[0], 1);
}

CAF_TEST(a node that fails atlctl check is tainted by the platform) {
  auto a0 = one_rank_running();
  caf::scoped_actor op{sys, true};
  park_rank_zero(op);
  CAF_CHECK_EQUAL(status(), "debugStop");
  op->send(sup, NodeToolRequest{"check", "check", "1ms", "", "all", ""});
  step();
  // The check's process on rank 0 (run 1) ends with a failure.
  self->send(sup,
             ProcessExit{StreamId::of_run(1, 0), 1, worker_pod_name("jo-race", 0), 1, 0, "", ""});
  step();
  op->send(sup, taint_atom::value, std::string("list"), std::string(""));
  step();
  std::string taints;
  for (int i = 0; i < 3; ++i)
    op->receive([&](std::int32_t, const std::string& text) { taints += text; },
                caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK(taints.find("\"node\":\"node-0\"") != std::string::npos);
  CAF_CHECK(taints.find("\"source\":\"platform\"") != std::string::npos);
  CAF_CHECK(taints.find("failed atlctl check") != std::string::npos);
}

// atl-burn hands each round's figure on its control channel: the run keeps
// them in order for the dashboard's charts; the whole burn's average (no
// round) goes to the metrics only.
CAF_TEST(a burns round figures are kept with its run) {
  caf::scoped_actor op{sys, true};
  one_rank_parked(op);
  op->send(sup, NodeToolRequest{"burn", "gemm", "1s", "", "all", ""});
  step();
  const std::string pod = worker_pod_name("jo-race", 0);
  self->send(sup, ProcessStarted{StreamId::of_run(1, 0), 1, pod, 42});
  step();
  for (const char* line : {"figure 0 gemm_tflops 600.5 round=1", "figure 0 gemm_tflops 610 round=2",
                           "figure 0 gemm_tflops 605.25", "figure 0 joules 1 round=3"}) {
    self->send(sup, ProcessNote{StreamId::of_run(1, 0), 1, pod, line});
    step();
  }
  CAF_CHECK_EQUAL(answers(op, 1), std::vector<std::int32_t>{0});  // the burn started
  op->send(sup, figures_atom::value, std::int32_t{1});
  step();
  auto [code, text] = next_answer(op);
  CAF_CHECK_EQUAL(code, 0);
  CAF_CHECK(text.find("\"figures\":[{\"gpu\":0,\"metric\":\"gemm_tflops\",\"pod\":\"" + pod +
                      "\",\"round\":1,\"value\":600.5},{\"gpu\":0,\"metric\":\"gemm_tflops\","
                      "\"pod\":\"" +
                      pod + "\",\"round\":2,\"value\":610.0}]") != std::string::npos);
  CAF_CHECK(text.find("\"figures_dropped\":0") != std::string::npos);
  op->send(sup, figures_atom::value, std::int32_t{7});
  step();
  auto [unknown, why] = next_answer(op);
  CAF_CHECK_EQUAL(unknown, 2);
  CAF_CHECK_EQUAL(why, "there is no run 7");
}

CAF_TEST(a burn that outlives its deadline is stopped and says why) {
  caf::scoped_actor op{sys, true};
  auto log0 = one_rank_parked(op);
  op->send(sup, NodeToolRequest{"burn", "gemm", "1s", "", "all", ""});
  step();
  CAF_CHECK_EQUAL(log0->runs, 1);
  // 1s of burn + atl-burn's 60s watchdog + 30s grace: nothing before that.
  sched.advance_time(std::chrono::seconds(90));
  step();
  CAF_CHECK(log0->run_stops.empty());
  sched.advance_time(std::chrono::seconds(2));
  step();
  CAF_REQUIRE_EQUAL(log0->run_stops.size(), 1u);
  CAF_CHECK_EQUAL(log0->run_stops[0], 1);
  op->send(sup, RunWait{1, 1});
  step();
  sched.advance_time(std::chrono::milliseconds(1));  // the long poll's answer is due
  step();
  // op's mailbox also holds the burn's own answer.
  std::string deadlines;
  for (int i = 0; i < 3; ++i)
    op->receive([&](std::int32_t, const std::string&,
                    const RunStatus& run) { deadlines += run.deadline + "\n"; },
                caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK(deadlines.find("burn -t gemm -d 1s ran past its deadline of 91s and was stopped") !=
            std::string::npos);
}

CAF_TEST(a node whose GPU disappears is tainted and the job restarts without it) {
  start(1, false, 10);
  NodeInfo info = gpu_pod();
  auto [a0, log0] = agent();
  self->send(sup, register_atom::value, info, a0);
  step();
  CAF_CHECK_EQUAL(status(), "command");
  self->send(sup, PodHeartbeat{info.pod, 2});  // all there
  step();
  CAF_CHECK_EQUAL(status(), "command");
  self->send(sup, PodHeartbeat{info.pod, 1});  // one gone
  step();
  CAF_CHECK_EQUAL(status(), "restarting");
  caf::scoped_actor op{sys, true};
  op->send(sup, taint_atom::value, std::string("list"), std::string(""));
  step();
  std::string taints;
  op->receive([&](std::int32_t, const std::string& text) { taints = text; },
              caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK(taints.find("\"node\":\"gpu-node\"") != std::string::npos);
  CAF_CHECK(taints.find("lost a GPU (it declared 2, 1 are there)") != std::string::npos);
}

// Ended debug runs are a bounded history: the oldest beyond --history are
// dropped, and a wait on one says so (code 1) rather than "no such run".
CAF_TEST(ended debug runs beyond the history are dropped and say so) {
  history = 2;
  caf::scoped_actor op{sys, true};
  auto log0 = one_rank_parked(op);
  const std::string pod = worker_pod_name("jo-race", 0);
  for (std::int32_t run = 1; run <= 3; ++run) {
    op->send(sup, RunCommand{"all", "true", false});
    step();
    self->send(sup, ProcessStarted{StreamId::of_run(run, 0), run, pod, 10 + run});
    step();
    self->send(sup, ProcessExit{StreamId::of_run(run, 0), run, pod, 0, 0, "", ""});
    step();
    CAF_CHECK_EQUAL(answers(op, 1), std::vector<std::int32_t>{0});  // started
    CAF_CHECK(begin_stop(op) > 0);  // back to debugStop, as the guide's operator does
  }
  CAF_CHECK_EQUAL(log0->runs, 3);
  // The dropped run's streams are forgotten by the sink (files, series).
  CAF_REQUIRE_EQUAL(forgotten->size(), 1u);
  CAF_CHECK_EQUAL(forgotten->front().first, static_cast<std::int32_t>(StreamKind::run));
  CAF_CHECK_EQUAL(forgotten->front().second, std::vector<std::int32_t>{1});
  struct Wait {
    std::int32_t code;
    std::string text;
    RunStatus status;
  };
  std::vector<Wait> waits;
  for (std::int32_t run : {1, 2, 3, 4}) {
    op->send(sup, RunWait{run, 1});
    step();
    op->receive(
        [&](std::int32_t code, const std::string& text, const RunStatus& status) {
          waits.push_back({code, text, status});
        },
        caf::after(std::chrono::seconds(0)) >> [] {});
  }
  CAF_REQUIRE_EQUAL(waits.size(), 4u);
  CAF_CHECK_EQUAL(waits[0].code, 1);  // run 1: dropped
  CAF_CHECK(waits[0].text.find("run 1 ended and its record was dropped") != std::string::npos);
  CAF_CHECK_EQUAL(waits[1].code, 0);  // runs 2 and 3: kept, typed
  CAF_CHECK_EQUAL(waits[1].status.run, 2);
  CAF_CHECK(waits[1].status.done);
  CAF_REQUIRE_EQUAL(waits[1].status.ranks.size(), 1u);
  CAF_CHECK_EQUAL(waits[1].status.ranks[0].pid, 12);
  CAF_CHECK_EQUAL(waits[1].status.ranks[0].failure(), "");
  CAF_CHECK_EQUAL(waits[2].code, 0);
  CAF_CHECK_EQUAL(waits[3].code, 2);  // run 4: never was
}

CAF_TEST_FIXTURE_SCOPE_END()

// A lost pod's reason in words (the timeline, `job failed: ...`), never
// CAF's "exit_reason(remote_link_unreachable)"; other errors as CAF says.
CAF_TEST(exit reasons are said in words) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::remote_link_unreachable, sys),
                  "the connection dropped");
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::user_shutdown, sys), "it was shut down");
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::kill, sys), "it was killed");
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::unhandled_exception, sys),
                  "it failed with an exception");
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::unreachable, sys), "it became unreachable");
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::unknown, sys), "it ended, no reason known");
  CAF_CHECK_EQUAL(exit_words(caf::error{}, sys), "it left");
  CAF_CHECK_EQUAL(exit_words(caf::exit_reason::normal, sys), "it left");
  const caf::error other = caf::sec::request_timeout;
  CAF_CHECK_EQUAL(exit_words(other, sys), sys.render(other));
  for (auto e : {caf::exit_reason::remote_link_unreachable, caf::exit_reason::kill})
    CAF_CHECK(exit_words(e, sys).find("exit_reason") == std::string::npos);
}

// A failed request's reason (a pre-flight's unanswered check, atlctl's
// "did not answer: ...") in words, never CAF's "system_error(...)".
CAF_TEST(request errors are said in words) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  CAF_CHECK_EQUAL(error_words(caf::sec::request_timeout, sys), "it timed out");
  CAF_CHECK_EQUAL(error_words(caf::sec::request_receiver_down, sys),
                  "it is gone (its process ended or the connection dropped)");
  CAF_CHECK_EQUAL(error_words(caf::exit_reason::remote_link_unreachable, sys),
                  "the connection dropped");
  for (auto e : {caf::sec::unexpected_message, caf::sec::no_route_to_receiving_node,
                 caf::sec::runtime_error, caf::sec::cannot_open_port, caf::sec::invalid_argument})
    CAF_CHECK(error_words(e, sys).find("system_error") == std::string::npos);
}
