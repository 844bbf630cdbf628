// StatusView (status_view.hpp): JSON objects built in place from the
// Supervisor's pieces (never dumped and parsed again), with its clock's time.
#include "atl/supervisor/status_view.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "atl/core/collectives.hpp"
#include "atl/core/json_out.hpp"
#include "atl/core/rank_set.hpp"

namespace atl::supervisor {

namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json diagnosis_view(const StackDiagnosis& d) {
  json groups = json::array();
  for (const auto& g : d.groups)
    groups.push_back({{"ranks", g.ranks}, {"top", g.top}, {"stack", g.signature}});
  return {{"groups", std::move(groups)},
          {"outliers", d.outliers},
          {"unknown", d.unknown},
          {"why", d.why}};
}

json checks_view(const Supervisor& sup) {
  json j = json::object();
  for (const auto& [pod, v] : sup.runs().verdicts()) {
    j[pod] = {{"run", v.run}, {"passed", v.passed}};
    if (!v.passed) j[pod]["reason"] = v.reason;
  }
  return j;
}

// status's "runs": a page counted from the newest (StatusPage::run_*).
json runs_view(const Supervisor& sup, const StatusPage& page) {
  json j = json::array();
  if (page.run_limit == 0) return j;  // the dashboard's usual ask: no walk at all
  const std::size_t total = sup.runs().size();
  std::size_t i = 0;
  sup.runs().for_each([&](std::int32_t id, const DebugRun& run) {
    if (!on_newest_page(i++, total, page.run_offset, page.run_limit)) return;
    j.push_back({{"run", id},
                 {"command", run.command},
                 {"tracked", run.tracked},
                 {"ranks", run.ranks.size()},
                 {"done", run.ranks.all_done()}});
  });
  return j;
}

json taints_view(const Supervisor& sup) {
  json j = json::array();
  for (const auto& [node, t] : sup.controller().taints().all())
    j.push_back({{"node", node},
                 {"source", to_string(t.source)},
                 {"reason", t.reason},
                 {"since_ms", t.since_unix_ms}});
  return j;
}

json goodput_view(const Goodput::View& g) {
  auto secs = [](std::int64_t ms) { return ms < 0 ? json() : json(ms / 1000.0); };
  json faults = json::array();
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

// A pod's row, written straight into the answer (a status lists every pod).
void pod_view(JsonOut& out, const Supervisor& sup, const std::string& pod, const char* standing,
              bool active) {
  const auto& registry = sup.pods().registry();
  const auto& taints = sup.controller().taints();
  out.begin_object();
  const NodeInfo* info = nullptr;
  if (const auto* joined = registry.find(pod)) info = &joined->info;
  const std::string* machine = registry.machine_of(pod);
  const bool tainted = machine && taints.tainted(*machine);
  // Members in name order, as the tree's dump wrote them.
  if (info) {
    out.member("address", info->address).member("cpus", info->cpus).member("gpus", info->gpus);
    if (auto quiet = sup.pods().liveness().silence(pod, sup.clock().now()))
      out.member("heartbeat_age_ms", quiet->count());
    out.member("memory", info->memory);
  }
  out.member("name", pod);
  if (machine) {
    out.member("node", *machine)
        .member("role", tainted  ? "quarantined"
                        : active ? "active"
                                 : "spare");
  }
  if (info) out.member("shm", info->shm);
  out.member("state", standing);
  if (machine) out.member("tainted", tainted);
  out.end_object();
}

double tenths(double x) { return static_cast<double>(std::llround(x * 10)) / 10; }

// A rank's figures over time, oldest first, as the sparklines draw them.
json trend_view(const std::deque<VitalsTrend::Point>& points, VitalsTrend::TimePoint now) {
  json j{{"ago_ms", json::array()},        {"lines_per_s", json::array()},
         {"cpu_percent", json::array()},   {"rss_bytes", json::array()},
         {"output_age_ms", json::array()}, {"progress_age_ms", json::array()}};
  for (const auto& p : points) {
    j["ago_ms"].push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - p.at).count());
    j["lines_per_s"].push_back(tenths(p.lines_per_s));
    j["cpu_percent"].push_back(tenths(p.cpu_percent));
    j["rss_bytes"].push_back(p.rss_bytes);
    j["output_age_ms"].push_back(p.output_age_ms);
    // null where no hang watch counted it
    j["progress_age_ms"].push_back(p.progress_age_ms < 0 ? json() : json(p.progress_age_ms));
  }
  return j;
}

// A rank's row, written straight into the answer (a status lists every
// rank: 8,000 of them at 1,000 x 8), its members in name order.
void rank_view(JsonOut& out, std::int32_t stream, const RankRecord& r, const RankFigures* f,
               const std::string* trend) {
  out.begin_object();
  if (r.done) out.member("exit_code", r.code);
  if (r.done && !r.note.empty()) out.member("note", r.note);
  out.member("pid", r.pid).member("pod", r.pod);
  if (stream >= 0) out.member("rank", stream);  // not for the driver or Ray's head
  if (r.done) out.member("signal", r.signal);
  out.member("state", r.done ? "exited" : r.started ? "running" : "starting");
  out.member("stream", stream_name(user_code_stream(stream)));
  if (trend) out.key("trend").raw(*trend);
  if (!r.done && f) {
    out.key("vitals").begin_object();
    out.member("cpu_percent", tenths(f->cpu_percent))
        .member("lines_per_s", tenths(f->lines_per_s))
        .member("mark", to_string(f->mark))
        .member("output_age_ms", f->output_age.count())
        .member("rss_bytes", f->rss_bytes)
        .member("user_pid", f->pid);
    out.end_object();
  }
  out.end_object();
}

}  // namespace

std::string info_json(const Supervisor& sup, const StatusPage& page,
                      const std::vector<std::string>& process_problems) {
  const JobSpec& job = sup.job();
  const JobController& controller = sup.controller();
  const UserCode& code = sup.code();
  json j;
  j["job_id"] = job.job_id;
  j["state"] = to_string(sup.state());
  j["mode"] = to_string(job.mode);
  j["address"] = sup.address();
  j["interposition_problems"] = process_problems;
  j["workers"] = job.workers;
  j["nproc_per_node"] = job.nproc_per_node;
  j["world_size"] = job.mode == JobMode::spmd ? job.workers * job.nproc_per_node : 0;
  j["attempt"] = code.attempt();
  j["restarts"] = controller.restarts().used();
  j["max_restarts"] = controller.restarts().budget();
  j["restart_on_failure"] = controller.restarts().options().restart_on_failure;
  j["attempts"] = controller.restarts().attempt_lines();
  j["entrypoint"] = job.entrypoint;
  const AttemptBook& book = controller.attempts();
  auto ms = [](std::optional<std::int64_t> t) { return t ? json(*t) : json(); };
  j["submitted_ms"] = ms(book.submitted_ms());
  j["started_ms"] = ms(book.started_ms());
  j["ended_ms"] = ms(book.ended_ms());
  j["attempt_history"] = json::array();
  for (const auto& a : book.all()) {
    json aj{{"attempt", a.attempt},
            {"started_ms", a.started_ms < 0 ? json() : json(a.started_ms)},
            {"ended_ms", a.ended_ms < 0 ? json() : json(a.ended_ms)},
            {"how", to_string(a.how)}};
    if (!a.detail.empty()) aj["detail"] = a.detail;
    j["attempt_history"].push_back(std::move(aj));
  }
  if (!controller.failure().empty()) j["failure"] = controller.failure();
  // The rows (pods, ranks) go straight into text, written after the rest.
  std::string pods_text;
  JsonOut pods_out(pods_text);
  pods_out.begin_array();
  std::map<std::string, int> pod_counts{{"joined", 0}, {"lost", 0}, {"missing", 0}};
  std::size_t pod_index = 0;
  const std::unordered_set<std::string_view> actives(controller.active().begin(),
                                                     controller.active().end());
  for (const auto& pod : sup.pods().registry().expected()) {
    const char* standing = to_string(sup.pods().registry().standing(pod));
    ++pod_counts[standing];
    if (on_page(pod_index++, page.pod_offset, page.pod_limit))
      pod_view(pods_out, sup, pod, standing, actives.count(pod) > 0);
  }
  pods_out.end_array();
  j["pods_total"] = sup.pods().registry().expected().size();
  j["pod_counts"] = pod_counts;
  // Rank counts come from the table's counters, not from a walk.
  const RankTable& ranks = code.ranks();
  const std::size_t started_or_done = ranks.size() - ranks.starting_count();
  j["rank_counts"] = {{"starting", ranks.starting_count()},
                      {"running", started_or_done - ranks.done_count()},
                      {"exited", ranks.done_count()}};
  j["ranks_total"] = ranks.size();
  std::string ranks_text;
  JsonOut ranks_out(ranks_text);
  ranks_out.begin_array();
  // Each running rank's figures (rank_vitals.hpp), when the page shows ranks.
  std::map<std::int32_t, RankFigures> vitals;
  if (page.rank_limit != 0 && sup.hang().vitals().attempt() == code.attempt())
    vitals = sup.hang().vitals().figures(sup.clock().now());
  std::size_t rank_index = 0;
  for (const auto& [stream, r] : ranks) {
    if (!on_page(rank_index++, page.rank_offset, page.rank_limit)) continue;
    auto v = vitals.find(stream);
    std::string trend;
    if (page.trend && !r.done && sup.hang().trend().attempt() == code.attempt())
      if (const auto* points = sup.hang().trend().of(stream))
        trend = dump(trend_view(*points, sup.clock().now()));
    rank_view(ranks_out, stream, r, v == vitals.end() ? nullptr : &v->second,
              trend.empty() ? nullptr : &trend);
  }
  ranks_out.end_array();
  // The silence the hang watch allows now, drawn across the progress ages.
  if (page.trend && sup.hang().watch().watching())
    j["hang_watch"] = {{"idle_timeout_ms", sup.hang().watch().idle_timeout().count()},
                       {"timeout_ms", sup.hang().watch().timeout().count()},
                       {"learned", sup.hang().watch().learned()}};
  j["runs"] = runs_view(sup, page);
  j["runs_total"] = sup.runs().size();
  j["checks"] = checks_view(sup);
  j["figures"] = json::array();
  for (const auto& [key, value] : sup.burn_figures()) {
    const auto& [pod, gpu, metric, size] = key;
    json f{{"pod", pod}, {"gpu", gpu}, {"metric", metric}, {"value", value}};
    if (!size.empty()) f["size"] = size;
    j["figures"].push_back(f);
  }
  j["spare_workers"] = job.spare_workers;
  j["taints"] = taints_view(sup);
  j["goodput"] = goodput_view(controller.goodput());
  // The tree's members, then the rows: `{...` + `,"pods":[...],"ranks":[...]}`.
  std::string text = dump(j);
  text.pop_back();
  text.reserve(text.size() + pods_text.size() + ranks_text.size() + 20);
  text += ",\"pods\":";
  text += pods_text;
  text += ",\"ranks\":";
  text += ranks_text;
  text += '}';
  return text;
}

std::string events_json(const Supervisor& sup) {
  json j = json::array();
  for (const auto& e : sup.controller().events())
    j.push_back({{"time_ms", e.unix_ms},
                 {"kind", e.kind},
                 {"text", e.text},
                 {"fault", is_fault_kind(e.kind)}});
  return dump(j);
}

std::string progress_json(const Supervisor& sup) {
  const auto now = sup.clock().now();
  const HangWatch& watch = sup.hang().watch();
  json ages = json::array();
  if (watch.watching()) {
    const auto world = static_cast<std::int32_t>(sup.code().rank_pods().size());
    for (std::int32_t rank = 0; rank < world; ++rank) {
      auto age = watch.progress_age(rank, now);
      ages.push_back(age ? json(age->count()) : json());
    }
  }
  // Each running rank's figures (rank_vitals.hpp), for /metrics.
  json vitals = json::array();
  if (sup.hang().vitals().attempt() == sup.code().attempt() && sup.state() == JobState::command)
    for (const auto& [rank, f] : sup.hang().vitals().figures(now))
      vitals.push_back({{"rank", rank},
                        {"output_age_ms", f.output_age.count()},
                        {"lines_per_s", f.lines_per_s},
                        {"cpu_percent", f.cpu_percent},
                        {"rss_bytes", f.rss_bytes},
                        {"mark", to_string(f.mark)}});
  json j{{"watching", watch.watching()},
         {"suspect", watch.suspect()},
         {"timeout_ms", watch.timeout().count()},
         {"idle_timeout_ms", watch.idle_timeout().count()},
         {"learned", watch.learned()},
         {"progress_age_ms", std::move(ages)},
         {"vitals", std::move(vitals)}};
  return j.dump();
}

std::string actors_json(const Supervisor& sup) {
  json j = json::array();
  for (const auto& [name, a] : sup.named().entries())
    j.push_back(
        {{"name", name}, {"owner", a.owner}, {"calls", a.calls}, {"pending", a.pending.size()}});
  return dump(j);
}

Answer dashboard_answer(const Supervisor& sup) {
  const auto& s = sup.settings();
  if (s.dashboard_url.empty())
    return {0, ReplyCode::failed, "the head serves no dashboard (headnode --dashboard-port off)"};
  nlohmann::json j{{"url", s.dashboard_url}, {"token", s.dashboard_token}};
  if (sup.job().mode == JobMode::ray) j["ray"] = s.dashboard_url + "/ray/";
  return {0, ReplyCode::ok, j.dump()};
}

Answer run_figures(const Supervisor& sup, RunId id) {
  const DebugRun* run = sup.runs().find(id);
  if (!run) {
    if (sup.runs().fate(id) == Fate::dropped)
      return {0, ReplyCode::failed,
              dropped_record_line("run", id, sup.settings().finished_kept, "ended runs")};
    return {0, ReplyCode::usage, "there is no run " + std::to_string(id)};
  }
  json figures = json::array();
  for (const auto& f : run->figures) {
    json j{{"pod", f.pod},
           {"gpu", f.gpu},
           {"metric", f.metric},
           {"round", f.round},
           {"value", f.value}};
    if (!f.size.empty()) j["size"] = f.size;
    figures.push_back(std::move(j));
  }
  json j{{"run", run->id},
         {"command", run->command},
         {"done", run->ranks.all_done()},
         {"figures", std::move(figures)},
         {"figures_dropped", run->figures_dropped},
         {"figures_released", run->figures_released}};
  return {0, ReplyCode::ok, dump(j)};
}

Answer taint_command(Supervisor& sup, const std::string& action, const std::string& nodes) {
  if (action == "list") {
    if (!nodes.empty()) return {0, ReplyCode::usage, "-n is only for set and remove"};
    return {0, ReplyCode::ok, dump(taints_view(sup))};
  }
  if (auto refused = sup.change_taints(action, nodes)) return {0, refused->code, refused->text};
  return {};
}

std::variant<Refusal, DiagnoseAsk> diagnose_ask(const Supervisor& sup, const std::string& text) {
  const int world = static_cast<int>(sup.code().rank_pods().size());
  if (world == 0)
    return Refusal{ReplyCode::refused,
                   "job is in state " + std::string(to_string(sup.state())) +
                       ": no ranks to diagnose (an spmd job's ranks, once started)"};
  DiagnoseAsk ask;
  if (!text.empty() && text != "all") {
    auto ranks = parse_rank_set(text, world);
    if (!ranks) return Refusal{ReplyCode::usage, "-r: " + ranks.error()};
    ask.only = std::move(ranks).value();
  }
  ask.agents = sup.agents_of_ranks(ask.only);
  return ask;
}

std::string diagnose_json(const Supervisor& sup, std::vector<StackReport> reports,
                          const DiagnoseAsk& ask, bool with_stacks) {
  // A pod takes all of its ranks' stacks: only the ranks asked for count.
  if (!ask.only.empty())
    reports.erase(std::remove_if(reports.begin(), reports.end(),
                                 [&](const StackReport& r) {
                                   return !std::binary_search(ask.only.begin(), ask.only.end(),
                                                              r.rank);
                                 }),
                  reports.end());
  CollectiveDiagnosis records;
  json j = diagnosis_view(group_stack_reports(reports, sup.hang_job(), &records));
  j["collectives"] = {{"findings", records.findings},
                      {"culprits", records.culprits},
                      {"without_record", records.without_record}};
  std::sort(reports.begin(), reports.end(),
            [](const StackReport& a, const StackReport& b) { return a.rank < b.rank; });
  json ranks = json::array();
  for (const auto& r : reports) {
    if (r.attempt != sup.code().attempt()) continue;
    json rj{{"rank", r.rank},
            {"pod", sup.pod_of_rank(r.rank)},
            {"state", std::string(1, static_cast<char>(r.state))},
            {"tool", r.tool},
            {"top", stack_top(parse_stack_report(r))}};
    if (!r.error.empty()) rj["error"] = r.error;
    if (auto c = parse_collectives(r.collectives)) {
      json groups = json::array();
      for (const auto& g : c->groups)
        groups.push_back({{"group", g.id},
                          {"name", g.name},
                          {"op", g.op},
                          {"entered", g.enqueued},
                          {"completed", g.completed}});
      rj["collectives"] = std::move(groups);
      rj["torch"] = c->torch;
    } else if (!r.collectives_error.empty()) {
      rj["collectives_error"] = r.collectives_error;
    }
    if (with_stacks) rj["stack"] = r.text;
    rj["gpus"] = r.gpus;
    ranks.push_back(std::move(rj));
  }
  j["ranks"] = std::move(ranks);
  // Each outlier's pod's GPUs, as its node's watch sees them.
  json outlier_gpus = json::object();
  const auto& outliers = j["outliers"];
  for (const auto& r : reports)
    if (std::find(outliers.begin(), outliers.end(), r.rank) != outliers.end())
      outlier_gpus[sup.pod_of_rank(r.rank)] = r.gpus;
  j["outlier_gpus"] = std::move(outlier_gpus);
  return dump(j);
}

}  // namespace atl::supervisor
