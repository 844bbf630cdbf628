// The hang watch's shell: the agents' progress samples fed to the HangWatch
// (spmd user code in command, one watch per attempt), its verdicts at each
// liveness tick, and the diagnosis of a suspect job: every pod takes its
// ranks' stacks (py-spy or gdb, bounded), they are grouped (core/stacks.hpp)
// and the watch decides; a hung job goes to the controller.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "atl/core/collectives.hpp"
#include "atl/core/rank_set.hpp"
#include "atl/core/stacks.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// What a node may spend on its ranks' stacks, and what the supervisor waits
// for all of them beyond that.
constexpr auto kStackTimeout = std::chrono::seconds(5);
constexpr auto kDiagnosisSlack = std::chrono::seconds(15);
// Between the two looks at a suspect job's stacks.
constexpr auto kSecondLook = std::chrono::seconds(1);

void act_on(Actor* self, const HangWatch::Verdict& verdict);

// Every pod of this attempt takes its ranks' stacks; `done` gets them all
// once every pod answered (or failed to).
// `no_stop`: ranks whose stacks are taken only if that stops nothing.
void gather_stacks(Actor* self, const std::vector<int>& only,
                   std::function<void(std::vector<StackReport>)> done,
                   const std::vector<std::int32_t>& no_stop = {}) {
  auto& st = self->state;
  const auto& rank_pods = st.code.rank_pods();
  std::vector<std::string> pods;
  auto add = [&](const std::string& pod) {
    if (std::find(pods.begin(), pods.end(), pod) == pods.end() && st.pods.joined(pod))
      pods.push_back(pod);
  };
  if (only.empty()) {
    for (const auto& pod : rank_pods) add(pod);
  } else {
    for (int rank : only)
      if (rank >= 0 && static_cast<std::size_t>(rank) < rank_pods.size()) add(rank_pods[rank]);
  }
  struct Gather {
    std::size_t pending = 0;
    std::vector<StackReport> reports;
    std::function<void(std::vector<StackReport>)> done;
  };
  auto g = std::make_shared<Gather>(Gather{pods.size(), {}, std::move(done)});
  if (pods.empty()) {
    g->done({});
    return;
  }
  auto take = [g](std::vector<StackReport> reports) {
    for (auto& r : reports) g->reports.push_back(std::move(r));
    if (--g->pending == 0) g->done(std::move(g->reports));
  };
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(kStackTimeout).count();
  for (const auto& pod : pods)
    self->request(st.pods.at(pod).agent, kStackTimeout + kDiagnosisSlack, diagnose_atom::value,
                  static_cast<std::int64_t>(ms), no_stop)
        .then([take](std::vector<StackReport>& reports) { take(std::move(reports)); },
              [take](const caf::error&) { take({}); });
}

std::vector<ThreadStack> parse_report(const StackReport& r) {
  if (r.tool == "py-spy") return parse_py_spy(r.text);
  if (r.tool == "gdb") return parse_gdb(r.text);
  return {};
}

// The reports of this attempt's ranks, parsed and grouped; a rank waiting
// on its DataLoader names the worker that does not deliver; the ranks'
// flight records (into `records` when given) say who the others wait on.
StackDiagnosis group_reports(const State& st, const std::vector<StackReport>& reports,
                             CollectiveDiagnosis* records = nullptr) {
  std::vector<RankStack> ranks;
  std::map<std::int32_t, RankCollectives> collectives;
  std::vector<std::int32_t> asked;
  for (const auto& r : reports) {
    if (r.attempt != st.code.attempt()) continue;
    auto threads = parse_report(r);
    std::vector<std::vector<ThreadStack>> helpers;
    for (const auto& text : r.helper_texts) helpers.push_back(parse_py_spy(text));
    ranks.push_back({r.rank, pod_of_rank(st, r.rank), stack_signature(threads), stack_top(threads),
                     static_cast<char>(r.state), stuck_loader_worker(r.rank, threads, helpers)});
    asked.push_back(r.rank);
    if (auto c = parse_collectives(r.collectives)) collectives[r.rank] = std::move(*c);
  }
  CollectiveDiagnosis c = diagnose_collectives(collectives, asked);
  StackDiagnosis d = with_collectives(group_stacks(ranks), ranks, c);
  if (records) *records = std::move(c);
  return d;
}

// Every pod's stacks are in (or did not come): grouped, said, decided.
void finish_diagnosis(Actor* self, const std::vector<StackReport>& reports) {
  auto& st = self->state;
  st.diagnosing = 0;
  // Each rank's flight record as its hook gave it, the latest look's, in the
  // attempt's log dir (rank-N.flight-record.json): the raw dumps behind the
  // verdict, for torch's own tools.
  for (const auto& r : reports)
    if (r.attempt == st.code.attempt() && !r.flight_record.empty())
      self->send(st.config.sink, attempt_file_atom::value, r.attempt,
                 "rank-" + std::to_string(r.rank) + ".flight-record.json", r.flight_record);
  CollectiveDiagnosis records;
  const StackDiagnosis d = group_reports(st, reports, &records);
  std::size_t ranks = 0;
  for (const auto& g : d.groups) ranks += g.ranks.size();
  ranks += d.unknown.size();
  std::string line = "stacks of " + std::to_string(ranks) + " ranks:";
  for (size_t i = 0; i < d.groups.size() && i < 3; ++i)
    line += std::string(i ? ";" : "") + " " + std::to_string(d.groups[i].ranks.size()) + " in " +
            d.groups[i].top;
  if (d.groups.size() > 3) line += "; " + std::to_string(d.groups.size() - 3) + " more groups";
  if (!d.unknown.empty())
    line += std::string(d.groups.empty() ? " " : "; ") + std::to_string(d.unknown.size()) +
            " without a stack";
  if (!records.findings.empty()) line += "; collectives: " + collective_reason(records, {});
  st.log->info("{}", line);
  const auto now = std::chrono::steady_clock::now();
  if (!st.first_look) {
    // Outliers count only if a second look, a moment later, sees the same:
    // ranks at work are caught at different places each time.
    st.first_look = d;
    st.controller.record("hang", line);
    self->delayed_send(self, kSecondLook, timeout_atom::value,
                       static_cast<std::int32_t>(kSecondLookTimer), st.code.attempt());
    return;
  }
  const bool still = same_grouping(*st.first_look, d);
  st.first_look.reset();
  if (!still) {
    st.controller.record("hang", line + " (moved since the first look: the ranks are at work)");
    if (auto verdict = st.hang.diagnosed({}, "", now)) act_on(self, *verdict);
    return;
  }
  if (auto verdict = st.hang.diagnosed(d.outliers, d.why, now)) act_on(self, *verdict);
}

// A suspect job: each pod of this attempt takes its ranks' stacks.
void diagnose(Actor* self) {
  auto& st = self->state;
  if (st.diagnosing != 0) return;
  const std::int32_t round = ++st.diagnosis_round;
  st.diagnosing = round;
  // A rank the watch sees computing is not stopped for a look (gdb's attach
  // stopped silently computing native ranks ~25-45% of the time): its stack
  // is read only where that stops nothing (py-spy). Those the watch judges
  // are the idle ones.
  std::vector<std::int32_t> computing;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [rank, record] : st.code.ranks())
    if (rank >= 0 && st.hang.working(rank, now)) computing.push_back(rank);
  gather_stacks(
      self, {},
      [self, round](std::vector<StackReport> reports) {
        auto& st = self->state;
        if (st.diagnosing != round) return;  // moot
        finish_diagnosis(self, reports);
      },
      computing);
}

void act_on(Actor* self, const HangWatch::Verdict& verdict) {
  auto& st = self->state;
  using Kind = HangWatch::Verdict::Kind;
  switch (verdict.kind) {
    case Kind::suspect:
      st.log->warn("job suspect: {}; taking the ranks' stacks", verdict.reason);
      st.controller.record("hang", "job suspect: " + verdict.reason);
      st.first_look.reset();
      diagnose(self);
      break;
    case Kind::harmless:
      st.controller.record("hang", "job suspect but harmless: " + verdict.reason);
      break;
    case Kind::recovered:
      st.log->info("job progressing again");
      st.controller.record("hang", "job progressing again");
      break;
    case Kind::hung: {
      // What the verdict rests on: the culprits' (else every rank's) state,
      // CPU, I/O and progress, beside the stacks' line.
      std::vector<std::int32_t> shown = verdict.culprits;
      if (shown.empty())
        for (const auto& [rank, record] : st.code.ranks())
          if (rank >= 0 && shown.size() < 8) shown.push_back(rank);
      st.controller.record(
          "hang", "evidence: " + st.hang.evidence(shown, std::chrono::steady_clock::now()));
      std::vector<std::string> pods;
      for (auto rank : verdict.culprits) {
        std::string pod = pod_of_rank(st, rank);
        if (!pod.empty() && std::find(pods.begin(), pods.end(), pod) == pods.end())
          pods.push_back(pod);
      }
      st.controller.on_hung(pods, verdict.reason);
      break;
    }
  }
}

}  // namespace

Result diagnose_now(Actor* self, const std::string& rank_text, bool with_stacks) {
  auto& st = self->state;
  const int world = static_cast<int>(st.code.rank_pods().size());
  if (world == 0)
    return {wire(ReplyCode::refused),
            "job is in state " + std::string(to_string(st.state())) +
                ": no ranks to diagnose (an spmd job's ranks, once started)"};
  std::vector<int> only;
  if (!rank_text.empty() && rank_text != "all") {
    auto ranks = parse_rank_set(rank_text, world);
    if (!ranks) return {wire(ReplyCode::usage), "-r: " + ranks.error()};
    only = std::move(ranks).value();
  }
  auto reply = self->make_response_promise<std::int32_t, std::string>();
  gather_stacks(
      self, only, [self, reply, only, with_stacks](std::vector<StackReport> reports) mutable {
        auto& st = self->state;
        // A pod takes all of its ranks' stacks: only the ranks asked for count.
        if (!only.empty())
          reports.erase(std::remove_if(reports.begin(), reports.end(),
                                       [&](const StackReport& r) {
                                         return !std::binary_search(only.begin(), only.end(),
                                                                    r.rank);
                                       }),
                        reports.end());
        CollectiveDiagnosis records;
        nlohmann::json j = diagnosis_view(st, group_reports(st, reports, &records));
        j["collectives"] = {{"findings", records.findings},
                            {"culprits", records.culprits},
                            {"without_record", records.without_record}};
        std::sort(reports.begin(), reports.end(),
                  [](const StackReport& a, const StackReport& b) { return a.rank < b.rank; });
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& r : reports) {
          if (r.attempt != st.code.attempt()) continue;
          nlohmann::json rj{{"rank", r.rank},
                            {"pod", pod_of_rank(st, r.rank)},
                            {"state", std::string(1, static_cast<char>(r.state))},
                            {"tool", r.tool},
                            {"top", stack_top(parse_report(r))}};
          if (!r.error.empty()) rj["error"] = r.error;
          if (auto c = parse_collectives(r.collectives)) {
            nlohmann::json groups = nlohmann::json::array();
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
        nlohmann::json outlier_gpus = nlohmann::json::object();
        const auto& outliers = j["outliers"];
        for (const auto& r : reports)
          if (std::find(outliers.begin(), outliers.end(), r.rank) != outliers.end())
            outlier_gpus[pod_of_rank(st, r.rank)] = r.gpus;
        j["outlier_gpus"] = std::move(outlier_gpus);
        reply.deliver(wire(ReplyCode::ok),
                      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      });
  return reply;
}

void on_second_look_timer(Actor* self, std::int32_t attempt) {
  auto& st = self->state;
  if (attempt == st.code.attempt() && st.first_look && st.hang.suspect()) diagnose(self);
}

void on_progress(Actor* self, const std::string& pod, const std::vector<ProgressReport>& reports) {
  auto& st = self->state;
  const auto now = std::chrono::steady_clock::now();
  if (st.vitals.attempt() != st.code.attempt()) st.vitals.reset(st.code.attempt());
  const bool watched = st.hang.watching() && st.hang_attempt == st.code.attempt();
  bool progressed = false;
  for (const auto& r : reports) {
    // This attempt's ranks only, and only as their own pod reports them.
    if (r.attempt != st.code.attempt() || pod_of_rank(st, r.rank) != pod) continue;
    st.vitals.observe(r.rank, {r.pid, r.lines, r.cpu_ticks, r.rss_bytes}, now);
    if (watched &&
        st.hang.observe(
            r.rank, {r.lines, r.steps, r.cpu_ticks, static_cast<char>(r.state), r.io_bytes}, now))
      progressed = true;
  }
  if (progressed) st.controller.on_progress();  // goodput's clock
}

void watch_for_hangs(Actor* self, HangWatch::TimePoint now) {
  auto& st = self->state;
  // Stragglers, from the same samples (this attempt's user code only).
  if (st.state() == JobState::command && st.job().mode == JobMode::spmd &&
      st.vitals.attempt() == st.code.attempt())
    for (const auto& [rank, line] : st.vitals.update_stragglers(now)) {
      const std::string pod = pod_of_rank(st, rank);
      if (!pod.empty()) st.controller.on_straggler(pod, line + " (pod " + pod + ")");
    }
  const bool watched = st.state() == JobState::command && st.job().mode == JobMode::spmd &&
                       st.job().hang_timeout.count() > 0;
  if (!watched) {
    if (st.hang.watching()) st.hang.stop();
    st.hang_attempt = 0;
    st.diagnosing = 0;  // its answers find no diagnosis: moot
    st.first_look.reset();
    return;
  }
  if (st.hang_attempt != st.code.attempt()) {
    std::vector<std::int32_t> ranks;
    for (const auto& [rank, record] : st.code.ranks())
      if (rank >= 0) ranks.push_back(rank);
    HangWatch::Options options;
    options.timeout = st.job().hang_timeout;
    options.ticks_per_second = std::max(1L, ::sysconf(_SC_CLK_TCK));
    options.factor = st.job().hang_factor;
    st.hang = HangWatch(options);
    st.hang.start(ranks, now);
    st.hang_attempt = st.code.attempt();
    st.diagnosing = 0;
    st.first_look.reset();
    return;
  }
  if (auto learned = st.hang.idle_timeout_news())
    st.controller.record("hang", "hang watch: idle ranks suspect after " +
                                     format_duration(*learned) + " of silence (p99 step " +
                                     format_duration(st.hang.step_p99()) + ")");
  if (auto verdict = st.hang.check(now)) act_on(self, *verdict);
}

}  // namespace atl::supervisor
