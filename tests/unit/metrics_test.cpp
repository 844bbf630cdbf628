#include "atl/core/metrics.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace {

const char* kStatus = R"({
  "job_id": "jo-x", "state": "command", "mode": "spmd", "attempt": 2, "restarts": 1,
  "max_restarts": 10,
  "pods": [{"name": "jo-x-worker-0", "state": "joined", "heartbeat_age_ms": 250},
           {"name": "jo-x-worker-1", "state": "lost"}],
  "ranks": [{"stream": 0, "state": "running"}, {"stream": 1, "state": "exited"},
            {"stream": 2, "state": "running"}],
  "checks": {"jo-x-worker-0": {"run": 1, "passed": false, "reason": "ECC"}},
  "figures": [{"pod": "jo-x-worker-0", "gpu": 1, "metric": "gemm_tflops", "value": 612.5},
              {"pod": "jo-x-worker-0", "gpu": 0, "metric": "allreduce_busbw_gbps",
               "value": 350, "size": "1G"}]
})";

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

// Prometheus keeps `job` for the scrape target (a series' own is renamed
// `exported_job`): the job is `atl_job` on every series, `job` on none.
TEST(Metrics, NoSeriesHasAJobLabel) {
  auto text = atl::prometheus_text(kStatus, R"({"rank-0": {"bytes": 12, "lines": 2}})");
  ASSERT_TRUE(text.ok()) << text.error();
  std::size_t series = 0;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++series;
    EXPECT_EQ(line.find("{job="), std::string::npos) << line;
    EXPECT_EQ(line.find(",job="), std::string::npos) << line;
    EXPECT_NE(line.find("atl_job=\"jo-x\""), std::string::npos) << line;
  }
  EXPECT_GT(series, 10u);
}

TEST(Metrics, RendersTheStatusAndLogCounters) {
  auto text = atl::prometheus_text(kStatus, R"({"rank-0": {"bytes": 12, "lines": 2}})");
  ASSERT_TRUE(text.ok()) << text.error();
  const std::string& t = *text;
  EXPECT_TRUE(has_line(t, R"(atl_job_state{atl_job="jo-x",state="command"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_state{atl_job="jo-x",state="failed"} 0)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_attempt{atl_job="jo-x"} 2)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_restarts_total{atl_job="jo-x"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_restart_budget{atl_job="jo-x"} 10)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_ranks{atl_job="jo-x",state="running"} 2)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_ranks{atl_job="jo-x",state="exited"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_ranks{atl_job="jo-x",state="starting"} 0)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_pods{atl_job="jo-x",state="joined"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_pods{atl_job="jo-x",state="lost"} 1)")) << t;
  EXPECT_TRUE(
      has_line(t, R"(atl_node_heartbeat_age_seconds{atl_job="jo-x",pod="jo-x-worker-0"} 0.25)"))
      << t;
  EXPECT_EQ(t.find(R"(pod="jo-x-worker-1"} )"), std::string::npos) << "a lost pod has no age";
  EXPECT_TRUE(has_line(t, R"(atl_check_passed{atl_job="jo-x",pod="jo-x-worker-0"} 0)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_log_bytes_total{atl_job="jo-x",stream="rank-0"} 12)")) << t;
  EXPECT_TRUE(
      has_line(t, R"(atl_burn_gemm_tflops{atl_job="jo-x",gpu="1",pod="jo-x-worker-0"} 612.5)"))
      << t;
  EXPECT_TRUE(has_line(
      t,
      R"(atl_burn_allreduce_busbw_gbps{atl_job="jo-x",gpu="0",pod="jo-x-worker-0",size="1G"} 350)"))
      << t;
  EXPECT_EQ(t.find("atl_burn_h2d_gbps"), std::string::npos) << "no family without figures";
  EXPECT_TRUE(has_line(t, R"(atl_log_lines_total{atl_job="jo-x",stream="rank-0"} 2)")) << t;
  // Every family is declared once, before its samples.
  for (const char* family : {"atl_job_state", "atl_ranks", "atl_log_bytes_total"}) {
    std::string type = std::string("# TYPE ") + family + " ";
    auto at = t.find(type);
    ASSERT_NE(at, std::string::npos) << family;
    EXPECT_EQ(t.find(type, at + 1), std::string::npos) << family;
  }
  EXPECT_EQ(t.back(), '\n');
}

TEST(Metrics, LabelValuesAreEscaped) {
  EXPECT_EQ(atl::escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  auto text = atl::prometheus_text(
      R"({"job_id": "j\"1", "state": "pending", "mode": "spmd", "pods": [], "ranks": []})", "{}");
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_NE(text->find(R"(atl_job_attempt{atl_job="j\"1"} 0)"), std::string::npos) << *text;
}

TEST(Metrics, OddValuesInsideTheStatusNeverThrow) {
  // Found by the fuzzer: a check verdict that is not an object threw.
  auto text = atl::prometheus_text(
      R"({"job_id": "j", "state": "command", "mode": "spmd", "pods": [1, "x", {"state": 2}],
          "ranks": [null, {"state": []}], "checks": {"p": 1, "q": {"passed": "yes"}},
          "figures": [3, {"metric": "gemm_tflops", "value": "fast"}]})",
      R"({"rank-0": 5, "rank-1": {"bytes": "many"}})");
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_NE(text->find(R"(atl_check_passed{atl_job="j",pod="p"} 0)"), std::string::npos) << *text;
  EXPECT_NE(text->find(R"(atl_check_passed{atl_job="j",pod="q"} 0)"), std::string::npos) << *text;
}

TEST(Metrics, DocumentsThatAreNotTheStatusAreErrors) {
  struct Bad {
    const char* status;
    const char* logs;
    const char* says;
  };
  for (const Bad& bad : {
           Bad{"", "{}", "status: not a JSON object"},
           Bad{"[]", "{}", "status: not a JSON object"},
           Bad{R"({"state": "command", "mode": "spmd", "pods": [], "ranks": []})", "{}",
               "'job_id'"},
           Bad{R"({"job_id": "j", "state": 3, "mode": "spmd", "pods": [], "ranks": []})", "{}",
               "'state'"},
           Bad{R"({"job_id": "j", "state": "command", "mode": "spmd", "ranks": []})", "{}",
               "'pods'"},
           Bad{R"({"job_id": "j", "state": "command", "mode": "spmd", "pods": [], "ranks": {}})",
               "{}", "'ranks'"},
           Bad{R"({"job_id": "j", "state": "command", "mode": "spmd", "pods": [], "ranks": []})",
               "[1]", "log stats: not a JSON object"},
       }) {
    auto text = atl::prometheus_text(bad.status, bad.logs);
    ASSERT_FALSE(text.ok()) << bad.status;
    EXPECT_NE(text.error().find(bad.says), std::string::npos) << text.error();
  }
}

// A big job's status comes without its rank list: the counts give the figures.
TEST(Metrics, RankCountsStandInForAnOmittedRankList) {
  const char* status = R"({
    "job_id": "jo-x", "state": "command", "mode": "spmd", "pods": [], "ranks": [],
    "rank_counts": {"starting": 3, "running": 31990, "exited": 7}, "ranks_total": 32000
  })";
  auto text = atl::prometheus_text(status, "{}");
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_TRUE(has_line(*text, R"(atl_ranks{atl_job="jo-x",state="running"} 31990)")) << *text;
  EXPECT_TRUE(has_line(*text, R"(atl_ranks{atl_job="jo-x",state="starting"} 3)")) << *text;
  EXPECT_TRUE(has_line(*text, R"(atl_ranks{atl_job="jo-x",state="exited"} 7)")) << *text;
}

TEST(Metrics, TheHangWatchGivesSuspectAndEachRanksProgressAge) {
  auto text = atl::prometheus_text(
      kStatus, "{}",
      R"({"watching": true, "suspect": true, "progress_age_ms": [1500, null, 250]})");
  ASSERT_TRUE(text.ok()) << text.error();
  const std::string& t = *text;
  EXPECT_TRUE(has_line(t, R"(atl_job_suspect{atl_job="jo-x"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_progress_age_seconds{atl_job="jo-x",rank="0"} 1.5)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_progress_age_seconds{atl_job="jo-x",rank="2"} 0.25)")) << t;
  EXPECT_EQ(t.find(R"(rank="1")"), std::string::npos) << "a rank never sampled has no age";
}

TEST(Metrics, WithoutAWatchTheJobIsNotSuspectAndNoRankHasAnAge) {
  for (const char* progress :
       {"", R"({"watching": false, "suspect": false, "progress_age_ms": []})"}) {
    auto text = atl::prometheus_text(kStatus, "{}", progress);
    ASSERT_TRUE(text.ok()) << text.error();
    EXPECT_TRUE(has_line(*text, R"(atl_job_suspect{atl_job="jo-x"} 0)")) << *text;
    EXPECT_EQ(text->find("atl_rank_progress_age_seconds"), std::string::npos) << *text;
  }
}

TEST(Metrics, EachRunningRanksFiguresAndMarks) {
  auto text = atl::prometheus_text(
      kStatus, "{}",
      R"({"watching": false, "suspect": false, "progress_age_ms": [], "vitals": [
          {"rank": 0, "output_age_ms": 500, "lines_per_s": 12.5, "cpu_percent": 99.5,
           "rss_bytes": 1048576, "mark": ""},
          {"rank": 1, "output_age_ms": 20000, "lines_per_s": 0, "cpu_percent": 0,
           "rss_bytes": 2048, "mark": "silent"}]})");
  ASSERT_TRUE(text.ok()) << text.error();
  const std::string& t = *text;
  EXPECT_TRUE(has_line(t, R"(atl_rank_output_age_seconds{atl_job="jo-x",rank="0"} 0.5)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_output_age_seconds{atl_job="jo-x",rank="1"} 20)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_lines_per_second{atl_job="jo-x",rank="0"} 12.5)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_cpu_percent{atl_job="jo-x",rank="0"} 99.5)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_rss_bytes{atl_job="jo-x",rank="0"} 1048576)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_rank_marked{atl_job="jo-x",mark="silent",rank="1"} 1)")) << t;
  EXPECT_EQ(t.find(R"(atl_rank_marked{atl_job="jo-x",mark="",rank="0"})"), std::string::npos) << t;
  // A figure missing is named, never rendered as 0.
  auto broken = atl::prometheus_text(kStatus, "{}", R"({"vitals": [{"rank": 0}]})");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error(), "progress: vitals: a rank without 'output_age_ms'");
}

TEST(Metrics, GoodputAndTheLearnedIdleTimeout) {
  const std::string status =
      R"({"job_id": "jo-x", "state": "command", "mode": "spmd", "attempt": 2, "pods": [],
          "ranks": [], "goodput": {"ratio": 0.75,
          "productive_s": 300.5, "faults": 1, "detection_s": 12, "restart_s": 2.5,
          "rewarm_s": 20, "warmup_s": null, "recent_faults": []}})";
  auto text = atl::prometheus_text(
      status, "{}", R"({"watching": true, "suspect": false, "idle_timeout_ms": 10000})");
  ASSERT_TRUE(text.ok()) << text.error();
  const std::string& t = *text;
  EXPECT_TRUE(has_line(t, R"(atl_job_goodput_ratio{atl_job="jo-x"} 0.75)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_productive_seconds{atl_job="jo-x"} 300.5)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_faults_total{atl_job="jo-x"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_fault_detection_seconds_total{atl_job="jo-x"} 12)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_fault_restart_seconds_total{atl_job="jo-x"} 2.5)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_fault_rewarm_seconds_total{atl_job="jo-x"} 20)")) << t;
  EXPECT_TRUE(has_line(t, R"(atl_job_idle_timeout_seconds{atl_job="jo-x"} 10)")) << t;
  EXPECT_NE(t.find("# TYPE atl_job_goodput_ratio gauge"), std::string::npos) << t;
}

TEST(Metrics, ABrokenProgressDocumentIsNamed) {
  auto text = atl::prometheus_text(kStatus, "{}", "[1]");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error(), "progress: not a JSON object");
  text = atl::prometheus_text(kStatus, "{}", R"({"progress_age_ms": 5})");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error(), "progress: field 'progress_age_ms' is not a list");
}
