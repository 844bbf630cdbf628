// StatusView: what status, events, taint list and run_wait show, as JSON
// objects (run_wait: a RunStatus) built in place from the pieces (never dumped and parsed again).
// No messages are sent from here.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "atl/actors/interposition.hpp"
#include "atl/core/status_page.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

nlohmann::json diagnosis_view(const State&, const StackDiagnosis& d) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : d.groups)
    groups.push_back({{"ranks", g.ranks}, {"top", g.top}, {"stack", g.signature}});
  return {{"groups", std::move(groups)},
          {"outliers", d.outliers},
          {"unknown", d.unknown},
          {"why", d.why}};
}

Result run_figures(const State& st, std::int32_t id) {
  const DebugRun* run = st.sup->runs().find(id);
  if (!run) {
    if (st.sup->runs().fate(id) == Fate::dropped)
      return {wire(ReplyCode::failed),
              dropped_record_line("run", id, st.config.finished_kept, "ended runs")};
    return {wire(ReplyCode::usage), "there is no run " + std::to_string(id)};
  }
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : run->figures) {
    nlohmann::json j{{"pod", f.pod},
                     {"gpu", f.gpu},
                     {"metric", f.metric},
                     {"round", f.round},
                     {"value", f.value}};
    if (!f.size.empty()) j["size"] = f.size;
    figures.push_back(std::move(j));
  }
  nlohmann::json j{{"run", run->id},
                   {"command", run->command},
                   {"done", run->ranks.all_done()},
                   {"figures", std::move(figures)},
                   {"figures_dropped", run->figures_dropped},
                   {"figures_released", run->figures_released}};
  return {wire(ReplyCode::ok), j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

nlohmann::json checks_view(const State& st) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [pod, v] : st.sup->runs().verdicts()) {
    j[pod] = {{"run", v.run}, {"passed", v.passed}};
    if (!v.passed) j[pod]["reason"] = v.reason;
  }
  return j;
}

nlohmann::json runs_view(const State& st, const StatusPage& page) {
  nlohmann::json j = nlohmann::json::array();
  if (page.run_limit == 0) return j;  // the dashboard's usual ask: no walk at all
  const std::size_t total = st.sup->runs().size();
  std::size_t i = 0;
  st.sup->runs().for_each([&](std::int32_t id, const DebugRun& run) {
    if (!on_newest_page(i++, total, page.run_offset, page.run_limit)) return;
    j.push_back({{"run", id},
                 {"command", run.command},
                 {"tracked", run.tracked},
                 {"ranks", run.ranks.size()},
                 {"done", run.ranks.all_done()}});
  });
  return j;
}

nlohmann::json taints_view(const State& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [node, t] : st.taints().all())
    j.push_back({{"node", node},
                 {"source", to_string(t.source)},
                 {"reason", t.reason},
                 {"since_ms", t.since_unix_ms}});
  return j;
}

static nlohmann::json goodput_view(const Goodput::View& g) {
  auto secs = [](std::int64_t ms) {
    return ms < 0 ? nlohmann::json() : nlohmann::json(ms / 1000.0);
  };
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& f : g.recent)
    faults.push_back({{"attempt", f.attempt},
                      {"reason", f.reason},
                      {"detection_s", secs(f.detection_ms)},
                      {"restart_s", secs(f.restart_ms)},
                      {"rewarm_s", secs(f.rewarm_ms)}});
  return {{"ratio", g.ratio},
          {"elapsed_s", secs(g.elapsed_ms)},
          {"productive_s", secs(g.productive_ms)},
          {"warmup_s", secs(g.warmup_ms)},
          {"faults", g.faults},
          {"detection_s", secs(g.detection_ms)},
          {"restart_s", secs(g.restart_ms)},
          {"rewarm_s", secs(g.rewarm_ms)},
          {"recent_faults", std::move(faults)}};
}

std::string events_json(const State& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : st.controller().events())
    j.push_back({{"time_ms", e.unix_ms},
                 {"kind", e.kind},
                 {"text", e.text},
                 {"fault", supervisor::is_fault_kind(e.kind)}});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string progress_json(const State& st) {
  const auto now = std::chrono::steady_clock::now();
  nlohmann::json ages = nlohmann::json::array();
  if (st.hang().watch().watching()) {
    const auto world = static_cast<std::int32_t>(st.code().rank_pods().size());
    for (std::int32_t rank = 0; rank < world; ++rank) {
      auto age = st.hang().watch().progress_age(rank, now);
      ages.push_back(age ? nlohmann::json(age->count()) : nlohmann::json());
    }
  }
  // Each running rank's figures (rank_vitals.hpp), for /metrics.
  nlohmann::json vitals = nlohmann::json::array();
  if (st.hang().vitals().attempt() == st.code().attempt() && st.state() == JobState::command)
    for (const auto& [rank, f] : st.hang().vitals().figures(now))
      vitals.push_back({{"rank", rank},
                        {"output_age_ms", f.output_age.count()},
                        {"lines_per_s", f.lines_per_s},
                        {"cpu_percent", f.cpu_percent},
                        {"rss_bytes", f.rss_bytes},
                        {"mark", to_string(f.mark)}});
  nlohmann::json j{{"watching", st.hang().watch().watching()},
                   {"suspect", st.hang().watch().suspect()},
                   {"timeout_ms", st.hang().watch().timeout().count()},
                   {"idle_timeout_ms", st.hang().watch().idle_timeout().count()},
                   {"learned", st.hang().watch().learned()},
                   {"progress_age_ms", std::move(ages)},
                   {"vitals", std::move(vitals)}};
  return j.dump();
}

std::string info_json(const State& st, const StatusPage& page) {
  nlohmann::json j;
  j["job_id"] = st.job().job_id;
  j["state"] = to_string(st.state());
  j["mode"] = to_string(st.job().mode);
  j["address"] = st.sup->address();
  // atl's replacements in CAF's calls that do not hold in the head (none).
  j["interposition_problems"] = interposition_report();
  j["workers"] = st.job().workers;
  j["nproc_per_node"] = st.job().nproc_per_node;
  j["world_size"] = st.job().mode == JobMode::spmd ? st.job().workers * st.job().nproc_per_node : 0;
  j["attempt"] = st.code().attempt();
  j["restarts"] = st.controller().restarts().used();
  j["max_restarts"] = st.controller().restarts().budget();
  j["restart_on_failure"] = st.controller().restarts().options().restart_on_failure;
  j["attempts"] = st.controller().restarts().attempt_lines();
  if (!st.controller().failure().empty()) j["failure"] = st.controller().failure();
  j["pods"] = nlohmann::json::array();
  std::map<std::string, int> pod_counts{{"joined", 0}, {"lost", 0}, {"missing", 0}};
  std::size_t pod_index = 0;
  const std::unordered_set<std::string_view> actives(st.active().begin(), st.active().end());
  for (const auto& pod : st.pods().registry().expected()) {
    const char* pod_state = to_string(st.pods().registry().standing(pod));
    ++pod_counts[pod_state];
    if (!on_page(pod_index++, page.pod_offset, page.pod_limit)) continue;
    nlohmann::json p{{"name", pod}, {"state", pod_state}};
    bool active = actives.count(pod) > 0;
    if (const std::string* machine = st.pods().registry().machine_of(pod)) {
      p["node"] = *machine;
      p["tainted"] = st.taints().tainted(*machine);
      p["role"] = st.taints().tainted(*machine) ? "quarantined" : active ? "active" : "spare";
    }
    if (const JoinedPod* it = st.pods().registry().find(pod)) {
      const NodeInfo& i = it->info;
      p["address"] = i.address;
      p["cpus"] = i.cpus;
      p["gpus"] = i.gpus;
      p["memory"] = i.memory;
      p["shm"] = i.shm;
      if (auto quiet = st.pods().liveness().silence(pod, std::chrono::steady_clock::now()))
        p["heartbeat_age_ms"] = quiet->count();
    }
    j["pods"].push_back(p);
  }
  j["pods_total"] = st.pods().registry().expected().size();
  j["pod_counts"] = pod_counts;
  // Rank counts come from the table's counters, not from a walk.
  const std::size_t started_or_done = st.code().ranks().size() - st.code().ranks().starting_count();
  j["rank_counts"] = {{"starting", st.code().ranks().starting_count()},
                      {"running", started_or_done - st.code().ranks().done_count()},
                      {"exited", st.code().ranks().done_count()}};
  j["ranks_total"] = st.code().ranks().size();
  j["ranks"] = nlohmann::json::array();
  // Each running rank's figures (rank_vitals.hpp), when the page shows ranks.
  std::map<std::int32_t, RankFigures> vitals;
  if (page.rank_limit != 0 && st.hang().vitals().attempt() == st.code().attempt())
    vitals = st.hang().vitals().figures(std::chrono::steady_clock::now());
  std::size_t rank_index = 0;
  for (const auto& [stream, r] : st.code().ranks()) {
    if (!on_page(rank_index++, page.rank_offset, page.rank_limit)) continue;
    nlohmann::json rj{{"stream", stream_name(user_code_stream(stream))},
                      {"pod", r.pod},
                      {"pid", r.pid},
                      {"state", r.done      ? "exited"
                                : r.started ? "running"
                                            : "starting"}};
    if (stream >= 0) rj["rank"] = stream;  // not for the driver or Ray's head
    if (r.done) {
      rj["exit_code"] = r.code;
      rj["signal"] = r.signal;
      if (!r.note.empty()) rj["note"] = r.note;
    } else if (auto v = vitals.find(stream); v != vitals.end()) {
      const RankFigures& f = v->second;
      auto tenths = [](double x) { return static_cast<double>(std::llround(x * 10)) / 10; };
      rj["vitals"] = {{"user_pid", f.pid},
                      {"output_age_ms", f.output_age.count()},
                      {"lines_per_s", tenths(f.lines_per_s)},
                      {"cpu_percent", tenths(f.cpu_percent)},
                      {"rss_bytes", f.rss_bytes},
                      {"mark", to_string(f.mark)}};
    }
    j["ranks"].push_back(rj);
  }
  j["runs"] = runs_view(st, page);  // built in place: no dump and parse again
  j["runs_total"] = st.sup->runs().size();
  j["checks"] = checks_view(st);
  j["figures"] = nlohmann::json::array();
  for (const auto& [key, value] : st.sup->burn_figures()) {
    const auto& [pod, gpu, metric, size] = key;
    nlohmann::json f{{"pod", pod}, {"gpu", gpu}, {"metric", metric}, {"value", value}};
    if (!size.empty()) f["size"] = size;
    j["figures"].push_back(f);
  }
  j["spare_workers"] = st.job().spare_workers;
  j["taints"] = taints_view(st);
  j["goodput"] = goodput_view(st.controller().goodput());
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace atl::supervisor
