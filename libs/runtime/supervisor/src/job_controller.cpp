#include "atl/supervisor/job_controller.hpp"

#include <algorithm>

#include "atl/core/duration.hpp"
#include "atl/core/quote.hpp"
#include "atl/os/logging.hpp"

namespace atl::supervisor {

namespace {

JobEvent failure_event(FaultKind kind) {
  switch (kind) {
    case FaultKind::preflight_failed:
      return JobEvent::check_failed;
    case FaultKind::rank_failed:
      return JobEvent::rank_failed;
    case FaultKind::ready_timeout:
      return JobEvent::ready_timeout;
    default:
      return JobEvent::node_lost;
  }
}

}  // namespace

JobController::JobController(ControllerOptions options, JobEffects* effects)
    : options_(std::move(options)),
      fx_(effects),
      log_(component_logger("supervisor")),
      restarts_({options_.job.max_restarts, options_.job.restart_on_failure,
                 options_.job.mode != JobMode::driver}) {}

bool JobController::is_active(const std::string& pod) const {
  return std::find(active_.begin(), active_.end(), pod) != active_.end();
}

std::string JobController::budget_text() const {
  return std::to_string(restarts_.used()) + "/" + std::to_string(restarts_.budget());
}

// --- the journal ---------------------------------------------------------------

bool JobController::apply(JobEvent event) {
  JobState before = state();
  auto next = lifecycle_.apply(event);
  if (!next) {
    log_->debug("ignored: {}", next.error());
    return false;
  }
  if (*next != before) {
    log_->info("job {}: {} -> {}", options_.job.job_id, to_string(before), to_string(*next));
    record("state", std::string(to_string(before)) + " -> " + std::string(to_string(*next)));
    persist();
  }
  return true;
}

bool is_fault_kind(std::string_view kind) {
  return kind == "fault" || kind == "hang" || kind == "restart" || kind == "taint" ||
         kind == "delete" || kind == "straggler";
}

void JobController::record(const std::string& kind, const std::string& text) {
  events_.push_back({fx_->unix_ms(), kind, text});
  fx_->add_event(events_.back());
  if (events_.size() > kMaxEvents) events_.pop_front();  // a bounded ring: all of it is in SQLite
}

void JobController::persist() {
  os::JobRecord r;
  r.state = std::string(to_string(state()));
  r.attempt = fx_->attempt();
  r.restarts = restarts_.used();
  r.faults = restarts_.history();
  r.taints = taints_.all();
  fx_->save(std::move(r));
}

void JobController::journal_failed(const std::string& why) {
  if (store_failed_) return;
  store_failed_ = true;  // once: the job goes on, its durable record is behind
  log_->error(
      "the job's durable state cannot be written (a head restart would not resume "
      "it): {}",
      why);
}

// --- start -------------------------------------------------------------------

// A record of this job in the durable state means the head was restarted. A
// run that ended there makes this a new submission (counters and taints
// dropped); one that was running resumes with its restarts, taints and
// timeline, and the head's death costs one restart when user code was running.
bool JobController::start(const os::JobRecord* resumed, std::size_t expected_pods) {
  const std::string waiting = "waiting for " + std::to_string(expected_pods) + " workers";
  const std::string& id = options_.job.job_id;
  attempts_.submitted(fx_->unix_ms());
  if (!resumed) {
    record("state", "job " + id + " submitted: " + waiting);
    persist();
  } else if (resumed->state == "succeeded" || resumed->state == "failed") {
    fx_->reset_journal();
    record("state",
           "job " + id + " submitted anew (its last run " + resumed->state + "): " + waiting);
    persist();
  } else {
    const os::JobRecord& r = *resumed;
    for (const auto& e : r.events) {
      events_.push_back({e.unix_ms, e.kind, e.text});
      if (events_.size() > kMaxEvents) events_.pop_front();
    }
    taints_.restore(r.taints);
    restarts_.restore(r.restarts, r.faults);
    const bool was_running =
        r.state == "command" || r.state == "restarting" || r.state == "initializing";
    attempts_.resumed_after(r.attempt, fx_->unix_ms());
    std::string line =
        "the head restarted (attempt " + std::to_string(r.attempt) + " was in " + r.state + ")";
    if (was_running) {
      Fault fault{FaultKind::head_restarted, "", line, r.attempt};
      record("fault", line);
      if (!restarts_.count(fault)) {
        fail(JobEvent::head_failed,
             line + "; the restart budget is spent (" + budget_text() + " restarts used)");
        return false;
      }
      line += ": restart " + budget_text();
    }
    log_->warn("job {} resumed: {}; {}", id, line, waiting);
    record("restart", "job resumed: " + line + "; " + waiting);
    fx_->print("job resumed: " + line);
    persist();
  }
  if (expected_pods > 0) {
    fx_->arm(JobTimer::ready, options_.job.ready_timeout, 0);
    fx_->arm(JobTimer::waiting, kWaitingEvery, 1);
  }
  return true;
}

// "waiting for workers: 1/2 joined, missing jo-x-worker-1 (20s of 5m)": what
// a pending job waits for, every kWaitingEvery until the ready timeout.
std::string JobController::waiting_line(std::int32_t ticks) const {
  const auto views = fx_->pod_views();
  std::size_t joined = 0;
  for (const auto& v : views) joined += v.joined;
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(kWaitingEvery) * ticks;
  std::string line = "waiting for workers: " + std::to_string(joined) + "/" +
                     std::to_string(views.size()) + " joined";
  std::string missing = fx_->missing_pods();
  // Thousands of pods: the first few, then how many more.
  constexpr std::size_t kNamed = 8;
  const std::size_t missing_count = views.size() - joined;
  if (missing_count > kNamed) {
    std::size_t at = 0;
    for (std::size_t k = 0; k < kNamed && at != std::string::npos; ++k)
      at = missing.find(", ", at == 0 ? 0 : at + 2);
    if (at != std::string::npos)
      missing = missing.substr(0, at) + " and " + std::to_string(missing_count - kNamed) + " more";
  }
  if (!missing.empty()) line += ", missing " + missing;
  return line + " (" + format_duration(waited) + " of " +
         format_duration(options_.job.ready_timeout) + ")";
}

// --- pods and checks -----------------------------------------------------------

Status JobController::select_active() {
  auto choice = choose_active(fx_->pod_views(), options_.job.workers, taints_);
  if (!choice) return Error{choice.error()};
  if (choice->active != active_) {
    std::string list;
    for (const auto& p : choice->active) list += (list.empty() ? "" : ", ") + p;
    log_->info("active pods: {}", list);
    ++active_changes_;
  }
  active_ = std::move(choice->active);
  return Ok{};
}

void JobController::all_joined() {
  if (!apply(JobEvent::all_joined)) return;
  if (auto chosen = select_active(); !chosen) {
    fail(JobEvent::check_failed, "cannot start: " + chosen.error());
    return;
  }
  fx_->start_preflight();
}

// A round's verdict: user code starts, or the pod to blame is tainted and the
// fault takes its course.
void JobController::on_preflight_verdict(const Preflight::Verdict& verdict) {
  const std::string& pod = verdict.pod;
  const std::string& problem = verdict.problem;
  // A node that fails the pre-flight gets a platform taint: the next attempt
  // (or a spare) avoids it.
  if (!problem.empty()) taint_platform(pod, "failed the pre-flight: " + problem);
  if (state() == JobState::initializing) {
    if (problem.empty()) {
      start_command();
    } else if (!fx_->machine_of(pod) || !select_active()) {
      // Nothing can take the failed node's place: say so now, not after the
      // ready timeout.
      fail(JobEvent::check_failed, problem);
    } else {
      on_fault({FaultKind::preflight_failed, pod, problem});
    }
  } else if (state() == JobState::restarting) {
    if (!problem.empty()) {
      on_fault({FaultKind::preflight_failed, pod, problem});
    } else if (fx_->user_code_done()) {
      start_command();
    } else {
      checked_ = active_;  // launched once the faulted attempt's last rank is heard
    }
  }
}

void JobController::start_command() {
  const bool restart = state() == JobState::restarting;
  if (!apply(JobEvent::checks_passed)) return;
  if (restart) {
    fx_->next_attempt();
    std::string line = "job restarted: attempt " + std::to_string(fx_->attempt()) + " (restart " +
                       budget_text() + ")";
    record("restart", line);
    fx_->print(line);
  }
  fx_->start_user_code();
  goodput_.launched(fx_->attempt(), fx_->unix_ms());
  attempts_.began(fx_->attempt(), fx_->unix_ms());
}

void JobController::recovered(std::int32_t attempt) {
  attempts_.began(attempt, fx_->unix_ms(), AttemptEnd::recovered, "atlctl stop, then recover");
  // A new attempt for the goodput too: a later fault is this attempt's.
  goodput_.launched(attempt, fx_->unix_ms());
}

void JobController::on_progress() { goodput_.progress(fx_->unix_ms()); }

// --- faults --------------------------------------------------------------------

// The pre-flight runs while the faulted attempt's ranks stop (it asks the
// pods nothing those ranks hold: a port, the working dir, the GPUs' count,
// the head), and the launch waits for both: at 1,000 pods each took ~0.25 s
// of a restart, one after the other.
void JobController::maybe_relaunch() {
  if (state() != JobState::restarting || fx_->preflight_under_way() || retry_pending_) return;
  if (checked_ && !fx_->user_code_done()) return;  // passed: the ranks are still stopping
  // Enough pods on untainted nodes (spares included)? Else keep waiting.
  if (auto chosen = select_active(); !chosen) {
    checked_.reset();
    log_->info("restart waits: {}", chosen.error());
    return;
  }
  if (checked_ && *checked_ == active_) {  // and every rank is heard
    checked_.reset();
    start_command();
    return;
  }
  checked_.reset();  // none yet, or for pods no longer the ones chosen
  fx_->start_preflight();
}

// `counted`: the fault used one restart of the budget (a delete while parked
// in a debug state uses none).
void JobController::begin_restart(const Fault& fault, bool counted) {
  const JobState before = state();
  apply(JobEvent::restart);
  std::string line = counted ? "job restarting (restart " + budget_text() + "): " + fault.detail
                             : "job restarting (from " + std::string(to_string(before)) +
                                   ": no restart used, " + budget_text() + "): " + fault.detail;
  log_->warn("{}", line);
  record("restart", line);
  fx_->print(line);
  goodput_.fault(fault.detail, fx_->unix_ms());
  attempts_.ended(AttemptEnd::fault, fault.detail, fx_->unix_ms());
  // --on-straggler taint: the attempt's stragglers do not train in the next.
  if (options_.job.on_straggler == OnStraggler::taint)
    for (const auto& [pod, why] : stragglers_) {
      const std::string* machine = fx_->machine_of(pod);
      if (machine && !taints_.tainted(*machine) && spare_available(*machine))
        taint_platform(pod, why);
    }
  stragglers_.clear();
  fx_->drop_preflight();  // a pre-flight under way is moot
  checked_.reset();
  // The debug command that held the job ends with the attempt it parked.
  if (before == JobState::debugCommand) fx_->end_parked_debug_run();
  const std::int32_t round = ++restart_round_;
  if (!fx_->user_code_done()) {
    fx_->stop_user_code();
    fx_->arm(JobTimer::restart_stop,
             options_.job.stop_warning.lead + options_.job.grace + kStopSlack, round);
  }
  // Pods must be back (and pass the pre-flight) within the ready timeout.
  fx_->arm(JobTimer::ready, options_.job.ready_timeout, round);
  if (fault.kind == FaultKind::preflight_failed) {
    retry_pending_ = true;  // the same check at once would fail the same way
    fx_->arm(JobTimer::restart_retry, kRetryPause, round);
    return;
  }
  maybe_relaunch();
}

// Every fault goes through the RestartPolicy: restart, fail, or carry on.
void JobController::on_fault(const Fault& reported) {
  Fault fault = reported;
  fault.attempt = fx_->attempt();  // the attempt it ends (status -v, logs/attempt-K)
  const size_t counted_before = restarts_.history().size();
  const JobState now = state();
  switch (restarts_.respond(now, fault)) {
    case FaultResponse::restart:
    case FaultResponse::restart_uncounted:
      record("fault", fault.detail);
      begin_restart(fault, restarts_.history().size() > counted_before);
      return;
    case FaultResponse::carry_on:
      if (now == JobState::command) {  // driver mode: the driver goes on
        record("fault", fault.detail + " (driver mode: the driver goes on, the pod is awaited)");
        log_->warn("{}: the driver goes on; the pod is awaited", fault.detail);
      } else if (!is_terminal(now)) {
        record("fault",
               fault.detail + " (no restart in state " + std::string(to_string(now)) + ")");
        log_->warn("{}: nothing to restart in state {}", fault.detail, to_string(now));
      }
      return;
    case FaultResponse::fail:
      break;
  }
  record("fault", fault.detail);
  if (restarts_.history().size() > counted_before) {
    fail(failure_event(fault.kind),
         fault.detail + "; the restart budget is spent (" + budget_text() + " restarts used)");
  } else {
    fail(failure_event(fault.kind), fault.detail);
  }
}

// Pods did not all come (back) within the ready timeout: a fault like the
// others (seed 002: a clear error, then retried per the policy), in every
// mode. A retry waits for them again; a spent budget fails the job naming them.
void JobController::on_ready_timeout(const std::string& detail) {
  log_->warn("{}", detail);
  fx_->print(detail);
  on_fault({FaultKind::ready_timeout, "", detail});
}

void JobController::on_hung(const std::vector<std::string>& culprits, const std::string& reason) {
  const std::string line = "job hung: " + reason;
  log_->warn("{}", line);
  record("hang", line);
  fx_->print(line);
  if (options_.job.on_hang == OnHang::report) return;
  for (const auto& pod : culprits) {
    const std::string* machine = fx_->machine_of(pod);
    if (!machine || taints_.tainted(*machine)) continue;
    if (spare_available(*machine)) {
      taint_platform(pod, "hung: " + reason);
    } else {
      log_->warn("node {} of hung pod {} not tainted: no spare could take its place", *machine,
                 pod);
    }
  }
  on_fault({FaultKind::job_hung, culprits.empty() ? std::string() : culprits.front(), line});
}

void JobController::on_straggler(const std::string& pod, const std::string& line) {
  log_->warn("{}", line);
  record("straggler", line);
  stragglers_[pod] = line;
}

// Whether the job could still start with `node` tainted (the same choice
// select_active makes, on a copy of the taints).
bool JobController::spare_available(const std::string& node) const {
  TaintSet with_node = taints_;
  with_node.mark(node, "", 0);
  return choose_active(fx_->pod_views(), options_.job.workers, with_node).ok();
}

void JobController::on_pod_gone(const std::string& pod, const Fault& fault) {
  const JobState now = state();
  const bool active = is_active(pod);
  // A spare (no ranks now) is simply awaited again; so is any pod before the start.
  if (!active && now != JobState::pending && !is_terminal(now)) {
    record("pod", fault.detail + " (a spare: no restart)");
    log_->warn("{} (a spare: no restart)", fault.detail);
    return;
  }
  if (active && fault.kind != FaultKind::pod_deleted && !is_terminal(now)) {
    // The same node lost twice in a row is not to be trusted again, when a
    // spare can take its place: a taint that leaves too few pods would stop
    // the job where the node might well have come back.
    const std::string* machine = fx_->machine_of(pod);
    const std::string node = machine ? *machine : std::string();
    if (!node.empty() && node == last_lost_node_) {
      if (spare_available(node)) {
        taint_platform(pod, "lost twice in a row (" + fault.detail + ")");
      } else {
        log_->warn("node {} lost twice in a row; not tainted: no spare could take its place", node);
      }
    }
    last_lost_node_ = node;
  }
  fx_->end_pod_work(pod);
  // A pre-flight under way is moot: in restarting the pod is awaited and the
  // pre-flight reruns when it is back; in initializing the loss decides.
  fx_->drop_preflight();
  checked_.reset();
  if (now == JobState::pending) {
    log_->warn("{} before the job started; waiting for it again", fault.detail);
    apply(JobEvent::node_lost);
  } else if (!is_terminal(now)) {
    on_fault(fault);
    // In debug states the pod is awaited; a stop waiting for its ranks is done.
    if (state() == JobState::debugStop || state() == JobState::debugCommand)
      fx_->pod_gone_while_parked(fault.detail);
    // Restarting already: the next choice of pods is checked at once.
    if (now == JobState::restarting) maybe_relaunch();
  } else if (fx_->user_code_done()) {
    finalize();
  }
}

bool JobController::on_user_code_ended(const ExitMeaning& meaning) {
  const JobState now = state();
  if (now == JobState::command) {
    if (meaning.kind == ExitMeaning::Kind::fault) {
      on_fault(meaning.fault);
    } else if (meaning.kind == ExitMeaning::Kind::succeeded && apply(JobEvent::ranks_succeeded)) {
      // Ray mode: the driver decided; Ray's processes everywhere are stopped
      // and the job ends once they are.
      if (options_.job.mode == JobMode::ray) fx_->stop_user_code();
      if (fx_->user_code_done()) finalize();
    }
  } else if (is_terminal(now)) {
    if (fx_->user_code_done()) finalize();
  } else if (now == JobState::restarting) {
    maybe_relaunch();  // the faulted attempt's ranks are stopping
  } else if (now == JobState::debugStop || now == JobState::debugCommand) {
    return false;
  }
  return true;
}

void JobController::on_timer(JobTimer timer, std::int32_t tag) {
  switch (timer) {
    case JobTimer::ready:
      if (state() == JobState::pending && tag == 0) {
        on_ready_timeout("workers not ready after " + format_duration(options_.job.ready_timeout) +
                         ": missing " + fx_->missing_pods());
      } else if (state() == JobState::restarting && tag == restart_round_) {
        // What it waits for: pods not back, pods back on tainted nodes (no
        // spare to take their place), or ranks still stopping.
        std::string missing = fx_->missing_pods();
        std::string why;
        if (!missing.empty()) {
          why = "pods not back: " + missing;
        } else if (auto chosen = choose_active(fx_->pod_views(), options_.job.workers, taints_);
                   !chosen) {
          why = chosen.error();
        } else {
          why = "ranks of the faulted attempt still stopping";
        }
        on_ready_timeout("restart not ready after " + format_duration(options_.job.ready_timeout) +
                         ": " + why);
      }
      return;
    case JobTimer::waiting:
      if (state() == JobState::pending && kWaitingEvery * tag < options_.job.ready_timeout) {
        fx_->print(waiting_line(tag));
        fx_->arm(JobTimer::waiting, kWaitingEvery, tag + 1);
      }
      return;
    case JobTimer::restart_stop:
      if (state() == JobState::restarting && tag == restart_round_ && !fx_->user_code_done()) {
        log_->warn("ranks of the faulted attempt did not all report; going on");
        fx_->abandon_user_code("did not report after the stop");
        maybe_relaunch();
      }
      return;
    case JobTimer::restart_retry:
      if (tag == restart_round_) {
        retry_pending_ = false;
        maybe_relaunch();
      }
      return;
    case JobTimer::fail_stop:
      if (!finalizing_) {
        log_->warn("ranks did not all report after the stop; ending anyway");
        finalize();
      }
      return;
    case JobTimer::shutdown:
      if (finalizing_ && !finished_) {
        log_->warn("workers did not leave in time");
        deliver_outcome();
      }
      return;
    case JobTimer::linger:
      release();
      return;
  }
}

// --- the ending ------------------------------------------------------------------

void JobController::fail(JobEvent event, const std::string& reason) {
  if (is_terminal(state())) return;
  // Every failure ends the job: an event its state has no failing transition
  // for (a ready timeout while the driver ran, a lost pod while parked) is
  // never a silent no-op that leaves the job where it was.
  auto next = next_state(state(), event);
  if (!next || *next != JobState::failed) {
    log_->warn("{} in state {} has no failing transition of its own: the job is aborted",
               to_string(event), to_string(state()));
    event = JobEvent::aborted;
  }
  apply(event);
  failure_ = reason;
  log_->error("job {} failed: {}", options_.job.job_id, reason);
  if (fx_->user_code_done()) {
    finalize();
    return;
  }
  fx_->stop_user_code();
  fx_->arm(JobTimer::fail_stop, options_.job.stop_warning.lead + options_.job.grace + kStopSlack,
           0);
}

void JobController::cancel(const std::string& why) {
  if (finished_) {
    release();  // a signal ends the linger
    return;
  }
  // Cancelled (the pod is being deleted): the outcome is handed over
  // without lingering.
  cancelled_ = true;
  fail(JobEvent::cancelled, "cancelled: " + why);
}

void JobController::finalize() {
  if (finalizing_) return;
  finalizing_ = true;
  goodput_.ended(fx_->unix_ms());
  const bool ok = state() == JobState::succeeded;
  attempts_.job_ended(ok           ? AttemptEnd::succeeded
                      : cancelled_ ? AttemptEnd::cancelled
                                   : AttemptEnd::failed,
                      ok ? "" : failure_, fx_->unix_ms());
  if (!ok) {
    fx_->print("job failed: " + failure_);
    // One line per attempt a fault ended, with its reason.
    for (const auto& line : restarts_.attempt_lines()) fx_->print("  " + line);
  }
  fx_->print("Job status:  " + std::string(to_string(state())));
  log_->info("job {} {}", options_.job.job_id, to_string(state()));
  if (fx_->wind_down(ok) == 0) {
    deliver_outcome();
    return;
  }
  fx_->arm(JobTimer::shutdown, kShutdownTimeout, 0);
}

void JobController::on_worker_left(std::size_t still_leaving) {
  if (finalizing_ && still_leaving == 0) deliver_outcome();
}

void JobController::deliver_outcome() {
  if (finished_) return;
  finished_ = true;
  if (options_.linger.count() > 0 && !cancelled_) {
    fx_->arm(JobTimer::linger, options_.linger, 0);
    return;
  }
  release();
}

void JobController::release() {
  if (released_) return;
  released_ = true;
  fx_->release(state() == JobState::succeeded ? 0 : 1);
}

void JobController::crashed(const std::string& reason) {
  if (!is_terminal(state())) {
    apply(JobEvent::head_failed);
    failure_ = reason;
  }
  finalizing_ = true;
  released_ = true;
}

// --- taints --------------------------------------------------------------------

void JobController::taint_platform(const std::string& pod, const std::string& reason) {
  const std::string* machine = fx_->machine_of(pod);
  if (!machine || taints_.tainted(*machine)) return;
  const std::string node = *machine;
  taints_.mark(node, reason, fx_->unix_ms());
  persist();
  std::string line = "node " + node + " tainted by the platform: " + reason;
  log_->warn("{}", line);
  record("taint", line);
}

std::optional<Refusal> JobController::change_taints(const std::string& action,
                                                    const std::string& node_text,
                                                    const std::vector<std::string>& machines) {
  if (action != "set" && action != "remove")
    return Refusal{ReplyCode::usage,
                   "-a: unknown action " + quote(action) + " (list, set or remove)"};
  auto nodes = parse_node_list(node_text);
  if (!nodes) return Refusal{ReplyCode::usage, "-n: " + nodes.error()};
  if (is_terminal(state()) || finalizing_)
    return Refusal{ReplyCode::refused, "job is in state " + std::string(to_string(state())) +
                                           ": it has ended, taint is refused"};
  Status done = action == "set" ? taints_.set(*nodes, machines, TaintSource::user,
                                              "set by atlctl taint", fx_->unix_ms())
                                : taints_.remove(*nodes);
  if (!done) return Refusal{ReplyCode::usage, done.error()};
  persist();
  fx_->placement_changed();
  std::string line = "taint " + action + " on " + node_text + " (atlctl taint)";
  log_->info("{}", line);
  record("taint", line);
  // A restart waiting for untainted pods may go on now.
  if (action == "remove") maybe_relaunch();
  return std::nullopt;
}

}  // namespace atl::supervisor
