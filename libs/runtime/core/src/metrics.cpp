#include "atl/core/metrics.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "atl/core/lifecycle.hpp"

namespace atl {

namespace {

using json = nlohmann::json;

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void sample(const std::string& name, const std::map<std::string, std::string>& labels,
              double value) {
    out_ << name;
    if (!labels.empty()) {
      out_ << "{";
      bool first = true;
      for (const auto& [k, v] : labels) {
        out_ << (first ? "" : ",") << k << "=\"" << escape_label_value(v) << "\"";
        first = false;
      }
      out_ << "}";
    }
    std::ostringstream number;
    number.precision(15);
    number << value;
    out_ << " " << number.str() << "\n";
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

double number_or(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text_or(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Expected<std::string> prometheus_text(std::string_view status_json, std::string_view log_stats_json,
                                      std::string_view progress_json) {
  json st = json::parse(status_json, nullptr, false);
  if (st.is_discarded() || !st.is_object()) return make_error("status: not a JSON object");
  for (const char* key : {"job_id", "state", "mode"})
    if (!st.contains(key) || !st[key].is_string())
      return make_error(std::string("status: field '") + key + "' is missing or not text");
  for (const char* key : {"pods", "ranks"})
    if (!st.contains(key) || !st[key].is_array())
      return make_error(std::string("status: field '") + key + "' is missing or not a list");
  json logs = json::parse(log_stats_json, nullptr, false);
  if (logs.is_discarded() || !logs.is_object()) return make_error("log stats: not a JSON object");
  json progress = json::object();
  if (!progress_json.empty()) {
    progress = json::parse(progress_json, nullptr, false);
    if (progress.is_discarded() || !progress.is_object())
      return make_error("progress: not a JSON object");
    if (auto ages = progress.find("progress_age_ms"); ages != progress.end() && !ages->is_array())
      return make_error("progress: field 'progress_age_ms' is not a list");
  }

  const std::string job = st["job_id"].get<std::string>();
  const std::string state = st["state"].get<std::string>();
  Writer w;
  w.family("atl_job_state", "gauge", "1 for the job's current lifecycle state, 0 for the others");
  for (JobState s : kAllJobStates) {
    std::string name(to_string(s));
    w.sample("atl_job_state", {{"atl_job", job}, {"state", name}}, name == state ? 1 : 0);
  }
  w.family("atl_job_attempt", "gauge", "the current attempt of user code (1 at the start)");
  w.sample("atl_job_attempt", {{"atl_job", job}}, number_or(st, "attempt", 0));
  w.family("atl_job_restarts_total", "counter", "restarts the job's faults have cost");
  w.sample("atl_job_restarts_total", {{"atl_job", job}}, number_or(st, "restarts", 0));
  w.family("atl_job_restart_budget", "gauge", "restarts allowed before the job fails");
  w.sample("atl_job_restart_budget", {{"atl_job", job}}, number_or(st, "max_restarts", 0));

  std::map<std::string, int> ranks_by_state = {{"starting", 0}, {"running", 0}, {"exited", 0}};
  if (auto counts = st.find("rank_counts"); counts != st.end() && counts->is_object()) {
    // The supervisor's counts: the rank list may be a page of it, or empty.
    for (auto& [s, n] : ranks_by_state) n = static_cast<int>(number_or(*counts, s.c_str(), 0));
  } else {
    for (const auto& r : st["ranks"]) ++ranks_by_state[text_or(r, "state")];
  }
  w.family("atl_ranks", "gauge", "processes of user code (ranks, the driver) by state");
  for (const auto& [s, n] : ranks_by_state)
    if (!s.empty()) w.sample("atl_ranks", {{"atl_job", job}, {"state", s}}, n);

  std::map<std::string, int> pods_by_state = {{"joined", 0}, {"lost", 0}, {"missing", 0}};
  for (const auto& p : st["pods"]) ++pods_by_state[text_or(p, "state")];
  w.family("atl_pods", "gauge", "worker pods (active and spare) by state");
  for (const auto& [s, n] : pods_by_state)
    if (!s.empty()) w.sample("atl_pods", {{"atl_job", job}, {"state", s}}, n);

  w.family("atl_node_heartbeat_age_seconds", "gauge",
           "seconds since the head last heard a joined pod's heartbeat");
  for (const auto& p : st["pods"]) {
    if (!p.contains("heartbeat_age_ms")) continue;
    w.sample("atl_node_heartbeat_age_seconds", {{"atl_job", job}, {"pod", text_or(p, "name")}},
             number_or(p, "heartbeat_age_ms", 0) / 1000.0);
  }

  // Goodput: the job's time spent training, and what its faults cost.
  if (auto g = st.find("goodput"); g != st.end() && g->is_object()) {
    w.family("atl_job_goodput_ratio", "gauge",
             "the job's time spent training (first to last progress of each attempt) over its "
             "time since the first launch");
    w.sample("atl_job_goodput_ratio", {{"atl_job", job}}, number_or(*g, "ratio", 0));
    w.family("atl_job_productive_seconds", "gauge", "the job's time spent training");
    w.sample("atl_job_productive_seconds", {{"atl_job", job}}, number_or(*g, "productive_s", 0));
    w.family("atl_job_faults_total", "counter", "faults that ended an attempt of user code");
    w.sample("atl_job_faults_total", {{"atl_job", job}}, number_or(*g, "faults", 0));
    static const std::pair<const char*, const char*> kCosts[] = {
        {"atl_fault_detection_seconds_total",
         "time from each faulted attempt's last progress to the fault's verdict, summed"},
        {"atl_fault_restart_seconds_total",
         "time from each fault's verdict to the next attempt's launch, summed"},
        {"atl_fault_rewarm_seconds_total",
         "time from each restarted attempt's launch to its first progress, summed"}};
    static const char* kKeys[] = {"detection_s", "restart_s", "rewarm_s"};
    for (std::size_t i = 0; i < 3; ++i) {
      w.family(kCosts[i].first, "counter", kCosts[i].second);
      w.sample(kCosts[i].first, {{"atl_job", job}}, number_or(*g, kKeys[i], 0));
    }
  }

  // The hang watch (hang_timeout): the job silent for its timeout, and how
  // long each rank has made no progress (its own output or signals).
  if (auto idle = progress.find("idle_timeout_ms");
      idle != progress.end() && idle->is_number() && idle->get<double>() > 0) {
    w.family("atl_job_idle_timeout_seconds", "gauge",
             "the silence after which a job whose ranks are all idle is suspect: learned from "
             "its steps (k x p99), else the hang timeout");
    w.sample("atl_job_idle_timeout_seconds", {{"atl_job", job}}, idle->get<double>() / 1000.0);
  }
  auto suspect = progress.find("suspect");
  w.family("atl_job_suspect", "gauge",
           "1 while no rank has made progress for the hang timeout (being diagnosed), else 0");
  w.sample("atl_job_suspect", {{"atl_job", job}},
           suspect != progress.end() && suspect->is_boolean() && suspect->get<bool>() ? 1 : 0);
  if (auto ages = progress.find("progress_age_ms"); ages != progress.end() && !ages->empty()) {
    w.family("atl_rank_progress_age_seconds", "gauge",
             "seconds since a rank last made progress (a new line of output, atl.progress, its "
             "progress file)");
    for (std::size_t rank = 0; rank < ages->size(); ++rank)
      if ((*ages)[rank].is_number())
        w.sample("atl_rank_progress_age_seconds",
                 {{"atl_job", job}, {"rank", std::to_string(rank)}},
                 (*ages)[rank].get<double>() / 1000.0);
  }

  // Each running rank's figures (atlctl status -v's columns).
  if (auto vitals = progress.find("vitals");
      vitals != progress.end() && vitals->is_array() && !vitals->empty()) {
    static const std::tuple<const char*, const char*, const char*, double> kVitals[] = {
        {"atl_rank_output_age_seconds", "output_age_ms", "seconds since a rank's last output line",
         1000.0},
        {"atl_rank_lines_per_second", "lines_per_s",
         "a rank's output lines per second over the last 10 s", 1.0},
        {"atl_rank_cpu_percent", "cpu_percent",
         "a rank's CPU time over the last 10 s, in percent of one core", 1.0},
        {"atl_rank_rss_bytes", "rss_bytes", "a rank's resident memory (its process tree)", 1.0}};
    for (const auto& [name, key, help, scale] : kVitals) {
      w.family(name, "gauge", help);
      for (const auto& v : *vitals) {
        auto rank = v.is_object() ? v.find("rank") : v.end();
        auto value = v.is_object() ? v.find(key) : v.end();
        if (rank == v.end() || value == v.end() || !rank->is_number_integer() ||
            !value->is_number())
          return make_error(std::string("progress: vitals: a rank without '") + key + "'");
        w.sample(name, {{"atl_job", job}, {"rank", std::to_string(rank->get<std::int64_t>())}},
                 value->get<double>() / scale);
      }
    }
    w.family("atl_rank_marked", "gauge",
             "1 for a rank marked (the mark label): stopped or uninterruptible as its process "
             "is, or apart from its peers: silent, slow, straggler");
    for (const auto& v : *vitals) {
      auto mark = v.find("mark");
      if (mark == v.end() || !mark->is_string() || mark->get<std::string>().empty()) continue;
      w.sample("atl_rank_marked",
               {{"atl_job", job},
                {"rank", std::to_string(v["rank"].get<std::int64_t>())},
                {"mark", mark->get<std::string>()}},
               1);
    }
  }

  w.family("atl_check_passed", "gauge",
           "the last atlctl check's verdict per pod: 1 passed, 0 failed");
  if (auto checks = st.find("checks"); checks != st.end() && checks->is_object()) {
    for (const auto& [pod, v] : checks->items()) {
      // (json::value() throws on a non-object or a non-bool: read by hand.)
      auto passed = v.is_object() ? v.find("passed") : v.end();
      bool ok = passed != v.end() && passed->is_boolean() && passed->get<bool>();
      w.sample("atl_check_passed", {{"atl_job", job}, {"pod", pod}}, ok ? 1 : 0);
    }
  }

  // The latest burn/check figures: a family per metric (one unit each).
  if (auto figures = st.find("figures"); figures != st.end() && figures->is_array()) {
    static const std::pair<const char*, const char*> kFigures[] = {
        {"gemm_tflops", "the last burn's GEMM TFLOP/s per GPU (average over its rounds)"},
        {"h2d_gbps", "the last transfer burn's host-to-device GB/s per GPU"},
        {"d2h_gbps", "the last transfer burn's device-to-host GB/s per GPU"},
        {"allreduce_busbw_gbps",
         "the last allreduce's bus bandwidth (GB/s) per size, as the "
         "master printed it"}};
    for (const auto& [metric, help] : kFigures) {
      std::string name = std::string("atl_burn_") + metric;
      bool declared = false;
      for (const auto& f : *figures) {
        if (text_or(f, "metric") != metric) continue;
        if (!declared) w.family(name.c_str(), "gauge", help);
        declared = true;
        std::map<std::string, std::string> labels{
            {"atl_job", job},
            {"pod", text_or(f, "pod")},
            {"gpu", std::to_string(static_cast<int>(number_or(f, "gpu", 0)))}};
        if (!text_or(f, "size").empty()) labels["size"] = text_or(f, "size");
        w.sample(name, labels, number_or(f, "value", 0));
      }
    }
  }

  w.family("atl_log_bytes_total", "counter", "bytes of output the head logged per stream");
  for (const auto& [stream, v] : logs.items())
    w.sample("atl_log_bytes_total", {{"atl_job", job}, {"stream", stream}},
             number_or(v, "bytes", 0));
  w.family("atl_log_lines_total", "counter", "lines of output the head logged per stream");
  for (const auto& [stream, v] : logs.items())
    w.sample("atl_log_lines_total", {{"atl_job", job}, {"stream", stream}},
             number_or(v, "lines", 0));
  return w.text();
}

}  // namespace atl
