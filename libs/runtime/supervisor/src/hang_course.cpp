#include "atl/supervisor/hang_course.hpp"

#include <algorithm>
#include <map>

namespace atl::supervisor {

std::string HangJob::pod_of(std::int32_t rank) const {
  if (!rank_pods || rank < 0 || static_cast<std::size_t>(rank) >= rank_pods->size()) return "";
  return (*rank_pods)[static_cast<std::size_t>(rank)];
}

std::int32_t HangJob::world() const {
  return rank_pods ? static_cast<std::int32_t>(rank_pods->size()) : 0;
}

std::vector<ThreadStack> parse_stack_report(const StackReport& r) {
  if (r.tool == "py-spy") return parse_py_spy(r.text);
  if (r.tool == "gdb") return parse_gdb(r.text);
  return {};
}

StackDiagnosis group_stack_reports(const std::vector<StackReport>& reports, const HangJob& job,
                                   CollectiveDiagnosis* records) {
  std::vector<RankStack> ranks;
  std::map<std::int32_t, RankCollectives> collectives;
  std::vector<std::int32_t> asked;
  for (const auto& r : reports) {
    if (r.attempt != job.attempt) continue;
    auto threads = parse_stack_report(r);
    std::vector<std::vector<ThreadStack>> helpers;
    for (const auto& text : r.helper_texts) helpers.push_back(parse_py_spy(text));
    ranks.push_back({r.rank, job.pod_of(r.rank), stack_signature(threads), stack_top(threads),
                     static_cast<char>(r.state), stuck_loader_worker(r.rank, threads, helpers)});
    asked.push_back(r.rank);
    if (auto c = parse_collectives(r.collectives)) collectives[r.rank] = std::move(*c);
  }
  CollectiveDiagnosis c = diagnose_collectives(collectives, asked);
  StackDiagnosis d = with_collectives(group_stacks(ranks), ranks, c);
  if (records) *records = std::move(c);
  return d;
}

HangCourse::HangCourse(long ticks_per_second)
    : ticks_per_second_(std::max(1L, ticks_per_second)),
      vitals_(RankVitals::Options{std::chrono::seconds(15), 1.0 / 3, 0.5, std::chrono::seconds(10),
                                  ticks_per_second_}) {}

void HangCourse::forget_looks() {
  looking_ = 0;  // answers of a look under way find it moot
  first_look_.reset();
}

HangEffects HangCourse::on_progress(const std::string& pod,
                                    const std::vector<ProgressReport>& reports, const HangJob& job,
                                    TimePoint now) {
  HangEffects out;
  if (vitals_.attempt() != job.attempt) vitals_.reset(job.attempt);
  const bool watched = watch_.watching() && watched_attempt_ == job.attempt;
  bool progressed = false;
  for (const auto& r : reports) {
    if (r.attempt != job.attempt || job.pod_of(r.rank) != pod) continue;
    vitals_.observe(r.rank, {r.pid, r.lines, r.cpu_ticks, r.rss_bytes, static_cast<char>(r.state)},
                    now);
    if (watched &&
        watch_.observe(
            r.rank, {r.lines, r.steps, r.cpu_ticks, static_cast<char>(r.state), r.io_bytes}, now))
      progressed = true;
  }
  if (progressed) out.push_back(hang::Progressed{});
  return out;
}

HangEffects HangCourse::on_tick(const HangJob& job, TimePoint now) {
  HangEffects out;
  // The figures over time (the dashboard's sparklines), every 2 s.
  if (job.spmd_command && vitals_.attempt() == job.attempt && trend_.due(job.attempt, now)) {
    auto figures = vitals_.own_figures(now, trend_.rank_bound());
    // With the hang watch's progress age of each, while it watches this attempt.
    std::map<std::int32_t, Millis> ages;
    if (watch_.watching() && watched_attempt_ == job.attempt)
      for (const auto& [rank, f] : figures)
        if (auto age = watch_.progress_age(rank, now)) ages.emplace(rank, *age);
    trend_.record(job.attempt, figures, now, ages);
  }
  // Stragglers, from the same samples (this attempt's user code only).
  if (job.spmd_command && vitals_.attempt() == job.attempt)
    for (const auto& [rank, line] : vitals_.update_stragglers(now)) {
      const std::string pod = job.pod_of(rank);
      if (!pod.empty()) out.push_back(hang::Straggler{pod, line + " (pod " + pod + ")"});
    }
  if (!job.spmd_command || job.timeout.count() <= 0) {
    if (watch_.watching()) watch_.stop();
    watched_attempt_ = 0;
    forget_looks();
    return out;
  }
  if (watched_attempt_ != job.attempt) {
    std::vector<std::int32_t> ranks;
    for (std::int32_t rank = 0; rank < job.world(); ++rank) ranks.push_back(rank);
    HangWatch::Options options;
    options.timeout = job.timeout;
    options.ticks_per_second = ticks_per_second_;
    options.factor = job.factor;
    watch_ = HangWatch(options);
    watch_.start(ranks, now);
    watched_attempt_ = job.attempt;
    forget_looks();
    return out;
  }
  if (auto learned = watch_.idle_timeout_news())
    out.push_back(hang::Record{"hang watch: idle ranks suspect after " + format_duration(*learned) +
                               " of silence (p99 step " + format_duration(watch_.step_p99()) +
                               ")"});
  if (auto verdict = watch_.check(now)) act_on(*verdict, job, now, out);
  return out;
}

// A suspect job: each pod of this attempt takes its ranks' stacks.
void HangCourse::look(const HangJob& job, TimePoint now, HangEffects& out) {
  if (looking_ != 0) return;
  looking_ = ++rounds_;
  // A rank the watch sees computing is not stopped for a look (gdb's attach
  // stopped silently computing native ranks ~25-45% of the time): its stack
  // is read only where that stops nothing (py-spy). Those the watch judges
  // are the idle ones.
  hang::TakeStacks take{looking_, {}};
  for (std::int32_t rank = 0; rank < job.world(); ++rank)
    if (watch_.working(rank, now)) take.no_stop.push_back(rank);
  out.push_back(std::move(take));
}

void HangCourse::act_on(const HangWatch::Verdict& verdict, const HangJob& job, TimePoint now,
                        HangEffects& out) {
  using Kind = HangWatch::Verdict::Kind;
  switch (verdict.kind) {
    case Kind::suspect:
      out.push_back(
          hang::Say{true, "job suspect: " + verdict.reason + "; taking the ranks' stacks"});
      out.push_back(hang::Record{"job suspect: " + verdict.reason});
      first_look_.reset();
      look(job, now, out);
      break;
    case Kind::harmless:
      out.push_back(hang::Record{"job suspect but harmless: " + verdict.reason});
      break;
    case Kind::recovered:
      out.push_back(hang::Say{false, "job progressing again"});
      out.push_back(hang::Record{"job progressing again"});
      break;
    case Kind::hung: {
      // What the verdict rests on: the culprits' (else every rank's) state,
      // CPU, I/O and progress, beside the stacks' line.
      std::vector<std::int32_t> shown = verdict.culprits;
      if (shown.empty())
        for (std::int32_t rank = 0; rank < job.world() && shown.size() < 8; ++rank)
          shown.push_back(rank);
      out.push_back(hang::Record{"evidence: " + watch_.evidence(shown, now)});
      hang::Hung hung{{}, verdict.reason};
      for (auto rank : verdict.culprits) {
        std::string pod = job.pod_of(rank);
        if (!pod.empty() && std::find(hung.pods.begin(), hung.pods.end(), pod) == hung.pods.end())
          hung.pods.push_back(pod);
      }
      out.push_back(std::move(hung));
      break;
    }
  }
}

HangEffects HangCourse::on_stacks(std::int32_t round, const std::vector<StackReport>& reports,
                                  const HangJob& job, TimePoint now) {
  HangEffects out;
  if (round == 0 || round != looking_) return out;  // moot: an older look, or none wanted
  looking_ = 0;
  // Each rank's flight record as its hook gave it, the latest look's, in the
  // attempt's log dir (rank-N.flight-record.json): the raw dumps behind the
  // verdict, for torch's own tools.
  for (const auto& r : reports)
    if (r.attempt == job.attempt && !r.flight_record.empty())
      out.push_back(hang::KeepFile{
          r.attempt, "rank-" + std::to_string(r.rank) + ".flight-record.json", r.flight_record});
  CollectiveDiagnosis records;
  const StackDiagnosis d = group_stack_reports(reports, job, &records);
  std::size_t ranks = 0;
  for (const auto& g : d.groups) ranks += g.ranks.size();
  ranks += d.unknown.size();
  std::string line = "stacks of " + std::to_string(ranks) + " ranks:";
  for (std::size_t i = 0; i < d.groups.size() && i < 3; ++i)
    line += std::string(i ? ";" : "") + " " + std::to_string(d.groups[i].ranks.size()) + " in " +
            d.groups[i].top;
  if (d.groups.size() > 3) line += "; " + std::to_string(d.groups.size() - 3) + " more groups";
  if (!d.unknown.empty())
    line += std::string(d.groups.empty() ? " " : "; ") + std::to_string(d.unknown.size()) +
            " without a stack";
  if (!records.findings.empty()) line += "; collectives: " + collective_reason(records, {});
  out.push_back(hang::Say{false, line});
  if (!first_look_) {
    // Outliers count only if a second look, a moment later, sees the same:
    // ranks at work are caught at different places each time.
    first_look_ = d;
    out.push_back(hang::Record{line});
    out.push_back(hang::ArmSecondLook{job.attempt, kSecondLook});
    return out;
  }
  const bool still = same_grouping(*first_look_, d);
  first_look_.reset();
  if (!still) {
    out.push_back(hang::Record{line + " (moved since the first look: the ranks are at work)"});
    if (auto verdict = watch_.diagnosed({}, "", now)) act_on(*verdict, job, now, out);
    return out;
  }
  if (auto verdict = watch_.diagnosed(d.outliers, d.why, now)) act_on(*verdict, job, now, out);
  return out;
}

HangEffects HangCourse::on_second_look(std::int32_t attempt, const HangJob& job, TimePoint now) {
  HangEffects out;
  if (attempt == job.attempt && attempt == watched_attempt_ && first_look_ && watch_.suspect())
    look(job, now, out);
  return out;
}

}  // namespace atl::supervisor
