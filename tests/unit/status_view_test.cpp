// StatusView in fake time: what status -v/--json, taint list, events,
// diagnose and /metrics show is read from the Supervisor's pieces as they
// stand, with the Supervisor's clock (heartbeat ages, progress ages), and
// the commands' refusals change nothing.
#include "atl/supervisor/status_view.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "supervisor_fixture.hpp"

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using namespace fixture;
using nlohmann::json;

json info(const Head& h, const StatusPage& page = {}) {
  return json::parse(info_json(*h.sup, page, {"a problem of this process"}));
}

const json* pod_entry(const json& j, const std::string& name) {
  for (const auto& p : j["pods"])
    if (p["name"] == name) return &p;
  return nullptr;
}

TEST(StatusView, InfoShowsEachPodsRoleAndHeartbeatAgeByTheSupervisorsClock) {
  Head h(spmd_spec(2, 1));
  auto before = info(h);
  EXPECT_EQ(before["state"], "pending");
  EXPECT_EQ(before["pod_counts"]["missing"], 3);
  EXPECT_EQ(before["ranks_total"], 0);
  h.to_command(3);
  h.silent.insert(pod_name(1));
  h.run_for(2s);
  auto j = info(h);
  EXPECT_EQ(j["state"], "command");
  EXPECT_EQ(j["world_size"], 4);
  EXPECT_EQ(j["interposition_problems"], json({"a problem of this process"}));
  EXPECT_EQ(j["pod_counts"]["joined"], 3);
  EXPECT_EQ(j["rank_counts"]["running"], 4);
  ASSERT_NE(pod_entry(j, pod_name(0)), nullptr);
  EXPECT_EQ((*pod_entry(j, pod_name(0)))["role"], "active");
  EXPECT_EQ((*pod_entry(j, pod_name(2)))["role"], "spare");
  EXPECT_EQ((*pod_entry(j, pod_name(0)))["heartbeat_age_ms"], 0);
  EXPECT_GE((*pod_entry(j, pod_name(1)))["heartbeat_age_ms"].get<int>(), 2000)
      << "silent for the 2 s the fake clock moved";
  // A page: one pod, two ranks, the counts still whole.
  auto page = info(h, StatusPage{1, 2, 0, 1, 0, -1});
  EXPECT_EQ(page["pods"].size(), 1u);
  EXPECT_EQ(page["pods_total"], 3);
  ASSERT_EQ(page["ranks"].size(), 2u);
  EXPECT_EQ(page["ranks"][0]["rank"], 1);
  EXPECT_EQ(page["rank_counts"]["running"], 4);
}

TEST(StatusView, DashboardUrlIsTheHeadsWithItsTokenAndRaysPageInRayMode) {
  Head off(spmd_spec(1, 1));
  auto none = dashboard_answer(*off.sup);
  EXPECT_EQ(none.code, ReplyCode::failed);
  EXPECT_NE(none.text.find("--dashboard-port"), std::string::npos) << none.text;
  SupervisorSettings served;
  served.dashboard_url = "https://10.0.0.1:8266";
  served.dashboard_token = "t0k";
  Head spmd(spmd_spec(1, 1), 10000, served);
  auto on = dashboard_answer(*spmd.sup);
  ASSERT_EQ(on.code, ReplyCode::ok) << on.text;
  EXPECT_EQ(json::parse(on.text), json({{"url", "https://10.0.0.1:8266"}, {"token", "t0k"}}));
  JobSpec ray = spmd_spec(1, 1);
  ray.mode = JobMode::ray;
  Head ray_head(ray, 10000, served);
  EXPECT_EQ(json::parse(dashboard_answer(*ray_head.sup).text)["ray"], "https://10.0.0.1:8266/ray/");
}

TEST(StatusView, TaintListShowsWhatSetChangedAndARefusalChangesNothing) {
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  EXPECT_EQ(taint_command(*h.sup, "list", "").text, "[]");
  auto usage = taint_command(*h.sup, "list", "node-0");
  EXPECT_EQ(usage.code, ReplyCode::usage);
  EXPECT_EQ(usage.text, "-n is only for set and remove");
  auto unknown = taint_command(*h.sup, "set", "node-0,node-9");
  EXPECT_NE(unknown.code, ReplyCode::ok);
  EXPECT_NE(unknown.text.find("node-9"), std::string::npos) << unknown.text;
  EXPECT_EQ(taint_command(*h.sup, "list", "").text, "[]") << "refused whole: nothing tainted";
  ASSERT_EQ(taint_command(*h.sup, "set", "node-2").code, ReplyCode::ok);
  auto list = json::parse(taint_command(*h.sup, "list", "").text);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["node"], "node-2");
  EXPECT_EQ(list[0]["source"], "user");
  EXPECT_EQ((*pod_entry(info(h), pod_name(2)))["role"], "quarantined");
}

TEST(StatusView, DiagnoseIsRefusedBeforeRanksAndKeepsOnlyTheRanksAskedFor) {
  Head h(spmd_spec(2, 1));
  auto early = diagnose_ask(*h.sup, "");
  ASSERT_TRUE(std::holds_alternative<Refusal>(early));
  EXPECT_NE(std::get<Refusal>(early).text.find("no ranks to diagnose"), std::string::npos);
  h.to_command(3);
  auto bad = diagnose_ask(*h.sup, "9");
  ASSERT_TRUE(std::holds_alternative<Refusal>(bad));
  EXPECT_EQ(std::get<Refusal>(bad).code, ReplyCode::usage);
  EXPECT_EQ(std::get<Refusal>(bad).text.rfind("-r: ", 0), 0u) << std::get<Refusal>(bad).text;
  auto all = std::get<DiagnoseAsk>(diagnose_ask(*h.sup, "all"));
  EXPECT_TRUE(all.only.empty());
  EXPECT_EQ(all.agents.size(), 2u) << "the active pods' agents, not the spare's";
  auto one = std::get<DiagnoseAsk>(diagnose_ask(*h.sup, "1"));
  EXPECT_EQ(one.only, std::vector<int>{1});
  ASSERT_EQ(one.agents.size(), 1u);
  EXPECT_EQ(one.agents[0], Head::agent(0)) << "rank 1 runs on pod 0";
  // Pod 0 answers for both of its ranks; only rank 1 was asked for.
  const int attempt = h.sup->code().attempt();
  std::vector<StackReport> reports(2);
  for (int r = 0; r < 2; ++r) {
    reports[r].rank = r;
    reports[r].attempt = attempt;
    reports[r].tool = "py-spy";
    reports[r].text =
        "Thread 1 (idle): \"MainThread\"\n    wait (train.py:" + std::to_string(r) + ")\n";
  }
  auto j = json::parse(diagnose_json(*h.sup, reports, one, true));
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_EQ(j["ranks"][0]["rank"], 1);
  EXPECT_EQ(j["ranks"][0]["pod"], pod_name(0));
  EXPECT_EQ(j["ranks"][0]["stack"], reports[1].text);
  auto without = json::parse(diagnose_json(*h.sup, reports, all, false));
  EXPECT_EQ(without["ranks"].size(), 2u);
  EXPECT_FALSE(without["ranks"][0].contains("stack"));
  // A stale attempt's stacks are not shown as this attempt's.
  reports[0].attempt = attempt - 1;
  EXPECT_EQ(json::parse(diagnose_json(*h.sup, reports, all, false))["ranks"].size(), 1u);
}

TEST(StatusView, ProgressAgesAndEventsFollowTheJob) {
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  // Every rank reports; then only rank 0 writes lines, for 3 s of fake time.
  auto report = [&](std::int64_t rank0_lines) {
    for (int pod = 0; pod < 2; ++pod) {
      std::vector<ProgressReport> reports;
      for (std::int32_t rank = pod * 2; rank < pod * 2 + 2; ++rank)
        reports.push_back({rank, h.sup->code().attempt(), rank == 0 ? rank0_lines : 0, 0, 0, 'S',
                           100 + rank, 0, 0});
      h.sup->on(PodProgress{pod_name(pod), reports});
    }
  };
  report(0);
  for (int i = 1; i <= 3; ++i) {
    h.run_for(1s);
    report(i * 10);
  }
  auto p = json::parse(progress_json(*h.sup));
  EXPECT_TRUE(p["watching"].get<bool>());
  EXPECT_EQ(p["timeout_ms"], 10000);
  ASSERT_EQ(p["progress_age_ms"].size(), 4u);
  EXPECT_EQ(p["progress_age_ms"][0], 0);
  // The watch began with the first tick after the first reports (+100 ms).
  EXPECT_EQ(p["progress_age_ms"][1], 2900);
  ASSERT_EQ(p["vitals"].size(), 4u);
  EXPECT_EQ(p["vitals"][0]["lines_per_s"], 10.0);
  EXPECT_EQ(p["vitals"][1]["output_age_ms"], 3000);
  EXPECT_EQ(run_figures(*h.sup, 7).code, ReplyCode::usage);
  EXPECT_EQ(run_figures(*h.sup, 7).text, "there is no run 7");
  // A lost pod is a fault in the timeline.
  h.silent.insert(pod_name(1));
  h.run_for(6s);
  auto events = json::parse(events_json(*h.sup));
  bool fault = false;
  for (const auto& e : events) fault = fault || e["fault"].get<bool>();
  EXPECT_TRUE(fault) << events.dump();
}

TEST(StatusView, EachRanksRowHasItsStateItsEndAndItsFigures) {
  // The rows are written straight into text (status_view.cpp): each member
  // there, of the right kind, and the whole answer one JSON document.
  Head h(spmd_spec(2, 1));
  h.to_command(3);
  for (int i = 0; i <= 3; ++i) {
    if (i > 0) h.run_for(1s);
    for (int pod = 0; pod < 2; ++pod) {
      std::vector<ProgressReport> reports;
      for (std::int32_t rank = pod * 2; rank < pod * 2 + 2; ++rank)
        reports.push_back(
            {rank, h.sup->code().attempt(), rank == 0 ? i * 10 : 0, 0, 0, 'S', 100 + rank, 0, 0});
      h.sup->on(PodProgress{pod_name(pod), reports});
    }
  }
  const std::int32_t attempt = h.sup->code().attempt();
  h.sup->process_ended({user_code_stream(3), attempt, pod_name(1), 0, 0, "", ""});
  auto j = info(h, StatusPage{0, -1, 0, -1, 0, -1, 1});
  ASSERT_EQ(j["ranks"].size(), 4u);
  const json& zero = j["ranks"][0];
  EXPECT_EQ(zero["rank"], 0);
  EXPECT_EQ(zero["stream"], "rank-0");
  EXPECT_EQ(zero["state"], "running");
  EXPECT_EQ(zero["pod"], pod_name(0));
  EXPECT_FALSE(zero.contains("exit_code"));
  ASSERT_TRUE(zero.contains("vitals")) << zero.dump();
  EXPECT_EQ(zero["vitals"]["user_pid"], 100);
  EXPECT_EQ(zero["vitals"]["lines_per_s"], 10.0);
  EXPECT_TRUE(zero["vitals"]["lines_per_s"].is_number_float());
  EXPECT_EQ(zero["vitals"]["output_age_ms"], 0);
  EXPECT_TRUE(zero["vitals"]["mark"].is_string());
  EXPECT_EQ(j["ranks"][1]["vitals"]["output_age_ms"], 3000);
  ASSERT_TRUE(zero.contains("trend")) << zero.dump();
  EXPECT_FALSE(zero["trend"]["ago_ms"].empty());
  const json& three = j["ranks"][3];
  EXPECT_EQ(three["state"], "exited");
  EXPECT_EQ(three["exit_code"], 0);
  EXPECT_EQ(three["signal"], 0);
  EXPECT_FALSE(three.contains("vitals"));
  EXPECT_FALSE(three.contains("trend"));
  EXPECT_FALSE(three.contains("note"));
  // Without the trend asked: none; a page of no ranks: an empty list.
  EXPECT_FALSE(info(h)["ranks"][0].contains("trend"));
  EXPECT_EQ(info(h, StatusPage{0, 0, 0, 0, 0, 0})["ranks"], json::array());
  EXPECT_EQ(info(h, StatusPage{0, 0, 0, 0, 0, 0})["pods"], json::array());
  // The pods' rows, beside them.
  const json* pod = pod_entry(j, pod_name(0));
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ((*pod)["state"], "joined");
  EXPECT_EQ((*pod)["role"], "active");
  EXPECT_EQ((*pod)["tainted"], false);
  EXPECT_TRUE((*pod)["node"].is_string());
  EXPECT_TRUE((*pod)["address"].is_string());
}

TEST(StatusView, EveryAttemptIsListedWithHowItEndedAndTheJobsTimes) {
  // Attempt 1 ends by a lost pod, 2 by atlctl stop then recover, 3 succeeds.
  JobSpec spec = spmd_spec(2, 1);
  spec.nproc_per_node = 1;
  Head h(spec);
  const std::int64_t submitted = h.clock.unix_ms();
  h.to_command(3);
  h.silent.insert(pod_name(1));
  h.run_for(6s);
  for (const auto& [stream, r] : h.sup->code().ranks())
    if (!r.done && r.pod == pod_name(0))
      h.sup->process_ended({user_code_stream(stream), r.attempt, r.pod, 0, 15, "", ""});
  h.pass_preflight();
  ASSERT_EQ(h.sup->state(), JobState::command);
  h.start_launched();
  ASSERT_EQ(h.sup->begin_stop().code, ReplyCode::ok);
  for (const auto& [stream, r] : h.sup->code().ranks())
    if (!r.done) h.sup->process_ended({user_code_stream(stream), r.attempt, r.pod, 0, 15, "", ""});
  ASSERT_FALSE(h.sup->on(Recover{}, [] { return ReplyId{1}; }));
  h.start_launched();
  h.clock.advance(2s);
  for (const auto& [stream, r] : h.sup->code().ranks())
    if (!r.done) h.sup->process_ended({user_code_stream(stream), r.attempt, r.pod, 0, 0, "", ""});
  auto j = info(h);
  EXPECT_EQ(j["entrypoint"], "python train.py");
  EXPECT_EQ(j["submitted_ms"], submitted);
  ASSERT_TRUE(j["ended_ms"].is_number()) << j["ended_ms"];
  const auto& history = j["attempt_history"];
  ASSERT_EQ(history.size(), 3u) << history.dump();
  EXPECT_EQ(history[0]["how"], "fault");
  EXPECT_NE(history[0]["detail"].get<std::string>().find(pod_name(1)), std::string::npos);
  EXPECT_EQ(history[1]["how"], "stopped and recovered");
  EXPECT_EQ(history[2]["how"], "succeeded");
  EXPECT_EQ(history[2]["ended_ms"], j["ended_ms"]);
  for (const auto& a : history) EXPECT_LE(a["started_ms"], a["ended_ms"]) << a.dump();
  EXPECT_EQ(j["attempts"].size(), 1u) << "the budget's lines: the fault only";
}

}  // namespace
}  // namespace atl::supervisor
