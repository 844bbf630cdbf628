// atlctl's debug commands on the JobSupervisor: stop, run, recover. The rules
// of when each is allowed live in core (atl::allow); this file does the work.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "atl/core/env.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/core/rank_set.hpp"
#include "atl/core/split.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/os/child_process.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kStartTimeout = DebugCourse::kStartTimeout;

Result refused(const Status& status) { return {wire(ReplyCode::refused), status.error()}; }
Result usage(const std::string& text) { return {wire(ReplyCode::usage), text}; }
Result ok(const std::string& text = "") { return {wire(ReplyCode::ok), text}; }
// A debug run's answers: the code, a line when refused or failed, its status.
RunResult run_refused(const Status& status) {
  return {wire(ReplyCode::refused), status.error(), RunStatus{}};
}
RunResult run_usage(const std::string& text) { return {wire(ReplyCode::usage), text, RunStatus{}}; }

// What the debug course sees of the job now.
DebugView debug_view(const State& st) {
  DebugView view;
  view.mode = st.job().mode;
  view.code = &st.code().ranks();
  if (view.mode == JobMode::ray) view.ray = st.code().ray_processes();
  view.run = [&st](RunId id) -> const RankTable* {
    const DebugRun* run = st.debug.find(id);
    return run ? &run->ranks : nullptr;
  };
  view.status = [&st](RunId id) { return run_status(*st.debug.find(id)); };
  view.gone = [&st](RunId id) {
    return st.debug.fate(id) == Fate::dropped
               ? dropped_record_line("run", id, st.config.finished_kept, "ended runs")
               : "there is no run " + std::to_string(id);
  };
  return view;
}

// The debug course's effects: its answers (to the callers kept in
// st.replies) and its timers.
void perform(Actor* self, const DebugEffects& effects) {
  auto& st = self->state;
  for (const auto& effect : effects) {
    if (const auto* a = std::get_if<debug::Answer>(&effect)) {
      deliver(st.replies, *a);
    } else if (const auto* t = std::get_if<debug::ArmStopTimer>(&effect)) {
      self->delayed_send(self, t->after, timeout_atom::value,
                         static_cast<std::int32_t>(kDebugStopTimer), t->stop);
    } else if (const auto* r = std::get_if<debug::ArmRecoverTimer>(&effect)) {
      self->delayed_send(self, r->after, timeout_atom::value,
                         static_cast<std::int32_t>(kRecoverStartTimer), r->attempt);
    } else if (const auto* a = std::get_if<debug::AnswerRun>(&effect)) {
      deliver(st.run_replies, *a);
    } else if (const auto* t = std::get_if<debug::ArmRunStartTimer>(&effect)) {
      self->delayed_send(self, t->after, timeout_atom::value,
                         static_cast<std::int32_t>(kStartTimer), t->run);
    } else if (const auto* w = std::get_if<debug::ArmWaitTimer>(&effect)) {
      self->delayed_send(self, w->after, expire_atom::value,
                         static_cast<std::int32_t>(kRunWaitTimer), w->waiter);
    }
  }
}

// A rank of `run` started or ended: who waits for it may be answered.
void on_run_progress(Actor* self, const DebugRun& run) {
  // Per start/exit report (16,000 in a fan-out to 8,000 ranks): the view is
  // built only when an answer is due.
  if (!self->state.course.run_answer_due(run.id, run.ranks)) return;
  DebugEffects out;
  self->state.course.on_run_progress(run.id, debug_view(self->state), out);
  perform(self, out);
}

}  // namespace

StopResult begin_stop(Actor* self) {
  auto& st = self->state;
  if (auto allowed = allow(DebugCommand::stop, st.state()); !allowed)
    return {wire(ReplyCode::refused), allowed.error(), std::int32_t{0}};
  JobState before = st.state();
  // Already stopped (or stopping): the caller waits for the same stop.
  if (before == JobState::debugStop)
    return {wire(ReplyCode::ok), std::string(), st.course.latest_stop()};
  st.controller().apply(JobEvent::debug_stop);
  auto grace = static_cast<std::int64_t>(st.job().grace.count());
  StopTarget target{true, 0};
  if (before == JobState::command) {
    if (st.job().mode == JobMode::ray) {
      if (st.driver) self->send(st.driver, stop_atom::value, grace);  // Ray stays up
    } else {
      st.sup->stop_user_code();
    }
  } else {  // debugCommand: end the tracked run; run -f commands keep going
    // A check stopped by an operator gives no verdict on its nodes.
    target = StopTarget{false, st.debug.release_tracked()};
    for (const auto& [id, agent] : st.agents)
      self->send(agent, stop_atom::value, StreamId::of_run(target.run, 0), grace);
  }
  // User code hears its stop warning (--stop-signal) first.
  const auto warning = before == JobState::command ? st.job().stop_warning.lead : Millis(0);
  DebugEffects out;
  const StopId op =
      st.course.begin_stop(target, warning + st.job().grace + kStopSlack, debug_view(st), out);
  perform(self, out);
  return {wire(ReplyCode::ok), std::string(), op};
}

Result await_stop(Actor* self, std::int32_t op) {
  auto& st = self->state;
  switch (st.course.stop_state(op)) {
    case DebugCourse::StopWait::unknown:
      return usage("there is no stop " + std::to_string(op));
    case DebugCourse::StopWait::over:
      return ok();  // that stop is over: maybe another operator recovered the job since
    case DebugCourse::StopWait::pending:
      break;
  }
  // (A promise takes the request over: made only when the answer waits.)
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  st.course.await_stop(op, st.replies.keep(promise));
  return promise;
}

namespace {

// What a debug command on target `rank` starts from (env, directory): the
// rank's own launch, or in driver mode the worker pod's site.
std::optional<ProcessLaunch> debug_base(const State& st, int rank) {
  if (st.job().mode != JobMode::driver) {
    auto it = st.code().launches().find(rank);
    if (it == st.code().launches().end()) return std::nullopt;
    return debug_launch_from(it->second);
  }
  std::string pod = st.sup->pod_of_rank(rank);
  if (pod.empty()) return std::nullopt;
  ProcessLaunch launch;
  launch.stream = StreamId::of_rank(rank);
  launch.env = to_env_strings(
      build_process_env(st.job(), {st.sup->address(), st.job().job_id}, st.sup->pod_site(pod)));
  launch.working_dir = st.job().working_dir;
  return launch;
}

// Starts `command_for(rank)` on each of `ranks` with the rank's own environment
// and directory (plus `extra_env`); answers once every one has started.
template <class CommandFor>
RunResult launch_run(Actor* self, const std::vector<int>& ranks, CommandFor command_for,
                     const EnvMap& extra_env, bool tracked, const std::string& label,
                     bool node_tool = false, bool is_check = false,
                     std::chrono::milliseconds deadline = std::chrono::milliseconds(0)) {
  auto& st = self->state;
  // What atlctl stop ends gets its grace first: a run that starts beside
  // ranks still saving a checkpoint (or holding the GPUs) sees a busy node.
  if (tracked && !st.course.stop_complete(debug_view(st)))
    return run_refused(make_error("job is in state " + std::string(to_string(st.state())) +
                                  " but " + st.course.still_stopping(debug_view(st)) +
                                  " are still stopping (in their grace); retry in a moment"));
  // A pod deleted or lost while parked: refuse before anything starts.
  for (int rank : ranks) {
    std::string pod = st.sup->pod_of_rank(rank);
    if (!st.pods().registry().joined(pod) || !debug_base(st, rank))
      return run_refused(
          make_error("pod " + (pod.empty() ? std::string("of rank ") + std::to_string(rank) : pod) +
                     " is not in the job now (lost or deleted); retry once it is back"));
  }
  const RunId id = st.debug.next_id();
  std::vector<std::pair<std::int32_t, std::string>> ranks_on_pods;
  std::map<std::string, std::vector<ProcessLaunch>> per_pod;
  for (int rank : ranks) {
    ProcessLaunch launch = *debug_base(st, rank);
    std::string pod = st.sup->pod_of_rank(rank);
    launch.command = command_for(rank, pod);
    launch.stream = StreamId::of_run(id, rank);
    launch.attempt = id;
    launch.control = node_tool;  // atl-burn's allreduce meets its peers through us
    for (const auto& [k, v] : extra_env) launch.env.push_back(k + "=" + v);  // later entries win
    ranks_on_pods.emplace_back(rank, pod);
    per_pod[pod].push_back(std::move(launch));
  }
  st.debug.open(tracked, is_check, label, deadline, ranks_on_pods);
  auto reply = self->make_response_promise<std::int32_t, std::string, RunStatus>();
  DebugEffects out;
  st.course.run_opened(id, st.run_replies.keep(reply), out);
  perform(self, out);
  for (auto& [pod, launches] : per_pod)
    if (const caf::actor* agent = st.agent_of(pod))
      self->send(*agent, run_atom::value, std::move(launches), st.config.sink);
  if (tracked) st.controller().apply(JobEvent::debug_run);
  st.log->info("debug run {}{}: {}", id, tracked ? "" : " (-f)", label);
  if (deadline.count() > 0)
    self->delayed_send(self, deadline, timeout_atom::value,
                       static_cast<std::int32_t>(kRunDeadlineTimer), id);
  return reply;
}

}  // namespace

RunResult start_run(Actor* self, const std::string& rank_text, const std::string& command,
                    bool forced) {
  auto& st = self->state;
  if (auto allowed = allow(DebugCommand::run, st.state(), forced); !allowed)
    return run_refused(allowed);
  if (command.find_first_not_of(" \t") == std::string::npos)
    return run_usage("run: no command given");
  // The targets: spmd's ranks, or one per worker pod (ray mode: its Ray node;
  // driver mode: the pod), never the head's own processes (driver, Ray's head).
  const int world = st.code().rank_pods().empty()
                        ? static_cast<int>(st.active().size()) * st.sup->streams_per_pod()
                        : static_cast<int>(st.code().rank_pods().size());
  auto ranks = parse_rank_set(rank_text, world);
  if (!ranks) return run_usage("-r: " + ranks.error());
  return launch_run(
      self, *ranks, [&](int, const std::string&) { return command; }, {}, !forced, command);
}

// What status -v shows for a check or burn: the atlctl command it came from
// (the tool list and the 1 ms check round are atl's own business).
static std::string node_tool_shown(const std::string& kind, const std::string& tools,
                                   const std::string& duration, const std::string& workers) {
  const bool all = workers.empty() || workers == "all";
  std::string shown = kind;
  if (kind == "check") {
    shown += tools == "check" ? " -t gpu" : tools == "allreduce" ? " -t allreduce" : " -t all";
  } else {
    shown += " -t " + (tools == "allreduce" ? std::string(all ? "global" : "batch") : tools) +
             " -d " + duration;
  }
  return all ? shown : shown + " -w " + workers;
}

RunResult start_node_tool(Actor* self, const std::string& kind, const std::string& tools,
                          const std::string& duration, const std::string& env_text,
                          const std::string& worker_text, const std::string& sizes_text) {
  auto& st = self->state;
  const DebugCommand command = kind == "check" ? DebugCommand::check : DebugCommand::burn;
  if (auto allowed = allow(command, st.state()); !allowed) return run_refused(allowed);
  EnvMap env;
  if (!env_text.empty()) {
    auto parsed = parse_env_spec(env_text);
    if (!parsed) return run_usage("-e: " + parsed.error());
    env = *parsed;
  }
  auto workers = parse_worker_list(worker_text);
  if (!workers) return run_usage("-w: " + workers.error());
  for (const auto& pod : *workers) {
    if (!st.pods().registry().joined(pod))
      return run_usage("-w: '" + pod + "' is not a pod of this job");
  }
  // One process per node: on its first rank, with that rank's environment
  // (a pod the job's placement left without ranks has none to run on).
  std::vector<int> ranks;
  for (size_t node = 0; node < st.active().size(); ++node) {
    const std::string& pod = st.active()[node];
    bool chosen = workers->empty();
    for (const auto& w : *workers) chosen |= w == pod;
    if (!chosen) continue;
    int first = -1;
    if (st.code().rank_pods().empty()) {
      first = static_cast<int>(node) * st.sup->streams_per_pod();
    } else {
      auto it = std::find(st.code().rank_pods().begin(), st.code().rank_pods().end(), pod);
      if (it != st.code().rank_pods().end())
        first = static_cast<int>(it - st.code().rank_pods().begin());
    }
    if (first >= 0) {
      ranks.push_back(first);
    } else if (!workers->empty()) {
      return run_usage("-w: pod '" + pod + "' runs no rank (the job's placement left it idle)");
    }
  }
  // Allreduce members meet through the supervisor (supervisor_rendezvous.cpp):
  // member i is the i-th chosen node, member 0's pod is the MasterAddr.
  std::vector<std::string> chosen_pods;
  for (int rank : ranks) chosen_pods.push_back(st.sup->pod_of_rank(rank));
  const std::vector<std::string_view> steps = split_list(tools);
  bool reduces = false;
  for (std::string_view step : steps) {
    if (step != "gemm" && step != "transfer" && step != "check" && step != "allreduce" &&
        step != "local")
      return run_usage("unknown burn step '" + std::string(step) + "'");
    reduces |= step == "allreduce" || step == "local";
  }
  // --sizes: checked again here (any client may send it), and handed on in
  // atl-burn's list form (digits and K/M/G: safe in the shell line).
  std::string sizes;
  int size_count = 0;
  if (!sizes_text.empty()) {
    if (!reduces)
      return run_usage("--sizes: only allreduce burns (-t local, global, batch) take sizes");
    auto parsed = gpu::parse_size_spec(sizes_text);
    if (!parsed) return run_usage("--sizes: " + parsed.error());
    sizes = gpu::format_size_list(*parsed);
    size_count = static_cast<int>(parsed->size());
  }
  auto step_duration = parse_duration(duration);
  if (!step_duration || step_duration->count() <= 0)
    return run_usage("-d: " +
                     (step_duration ? std::string("must be positive") : step_duration.error()));
  // The shell line gets the duration as atl formats it, never the text sent.
  const std::string dur = format_duration(*step_duration);
  auto command_for = [&](int, const std::string& pod) {
    size_t index = 0;
    while (chosen_pods[index] != pod) ++index;
    // Every step runs even if an earlier one failed (allreduce peers wait for
    // each other); the exit status is the worst of them.
    std::string cmd = "s=0";
    for (std::string_view step : steps) {
      // "local": an allreduce of each node on its own (no rendezvous).
      cmd += "; atl-burn " +
             (step == "local" ? std::string("allreduce --local") : std::string(step)) + " -d " +
             dur + " --pod " + pod + " --expect-gpus " +
             std::to_string(st.pods().registry().at(pod).info.gpus);
      if (step == "allreduce") {
        cmd += " --index " + std::to_string(index) + " --host " +
               st.pods().registry().at(pod).info.address + " --master " + chosen_pods.front();
      }
      if ((step == "allreduce" || step == "local") && !sizes.empty()) cmd += " --sizes " + sizes;
      cmd += " || s=1";
    }
    return cmd + "; exit $s";
  };
  return launch_run(
      self, ranks, command_for, env, true, node_tool_shown(kind, tools, dur, worker_text), true,
      command == DebugCommand::check, gpu::node_tool_deadline(steps, *step_duration, size_count));
}

RunResult await_run(Actor* self, std::int32_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  const DebugRun* found = st.debug.find(id);
  if (!found) {
    if (st.debug.fate(id) == Fate::dropped)
      return {wire(ReplyCode::failed),
              dropped_record_line("run", id, st.config.finished_kept, "ended runs"), RunStatus{}};
    return run_usage("there is no run " + std::to_string(id));
  }
  if (found->ranks.all_done()) return {wire(ReplyCode::ok), std::string(), run_status(*found)};
  auto promise = self->make_response_promise<std::int32_t, std::string, RunStatus>();
  DebugEffects out;
  st.course.await_run(id, st.run_replies.keep(promise), std::chrono::milliseconds(timeout_ms), out);
  perform(self, out);
  return promise;
}

Result recover(Actor* self) {
  auto& st = self->state;
  if (auto allowed = allow(DebugCommand::recover, st.state()); !allowed) return refused(allowed);
  // Ray mode: the driver alone starts again on a Ray cluster still up.
  auto scope = st.course.recover_scope(debug_view(st));
  if (!scope) return refused(make_error(scope.error()));
  if (*scope == LaunchScope::everything) {
    // Pods deleted or lost while parked may be back with new addresses, or be
    // replaced by spares: the layout is made anew (no restart is counted).
    if (auto chosen = st.controller().select_active(); !chosen)
      return refused(make_error("job is in state debugStop but cannot recover yet: " +
                                chosen.error() + "; retry recover once the pods are back"));
    if (!st.sup->plan_user_code()) return {wire(ReplyCode::failed), st.controller().failure()};
  }
  st.code().next_attempt();
  st.controller().apply(JobEvent::recover);
  st.log->info(*scope == LaunchScope::driver_only
                   ? "recovering: the driver starts again on the running Ray cluster (attempt {})"
                   : "recovering: user code restarts from scratch (attempt {})",
               st.code().attempt());
  st.sup->launch_user_code(*scope);
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  DebugEffects out;
  st.course.recovering(st.replies.keep(promise), st.code().attempt(), debug_view(st), out);
  perform(self, out);
  return promise;
}

void on_user_code_progress(Actor* self) {
  if (!self->state.course.wants_progress()) return;  // per report: nothing to build
  DebugEffects out;
  self->state.course.on_progress(debug_view(self->state), out);
  perform(self, out);
}

void on_debug_started(Actor* self, const ProcessStarted& started, const StreamId& id) {
  DebugRun* run = self->state.debug.find(id.run);
  if (!run) return;
  run->ranks.mark_started(id.rank, started.pid);
  on_run_progress(self, *run);
}

void on_debug_exit(Actor* self, const ProcessExit& exit, const StreamId& id) {
  DebugRun* live = self->state.debug.live(id.run);  // an ended run takes no more ends
  if (!live) return;
  DebugRun& run = *live;
  if (!run.ranks.mark_done(id.rank, exit.code, exit.signal, exit.error)) return;
  auto rank = run.ranks.find(id.rank);
  if (run.is_check && run.stopped) {
    self->state.log->info("check run {} on {} stopped before its verdict: no taint", run.id,
                          rank->second.pod);
  } else if (run.is_check) {
    os::ExitStatus status{exit.code, exit.signal};
    bool passed = exit.error.empty() && status.success();
    std::string reason = !exit.error.empty() ? exit.error : status.describe();
    self->state.debug.record_verdict(rank->second.pod, run.id, passed, reason);
    if (!passed)
      self->state.controller().taint_platform(
          rank->second.pod, "failed atlctl check (run " + std::to_string(run.id) + "): " + reason);
  }
  if (!run.hellos.empty() && !run.hellos.count(id.rank)) {
    os::ExitStatus status{exit.code, exit.signal};
    abandon_rendezvous(self, run,
                       rank->second.pod + " ended (" +
                           (exit.error.empty() ? status.describe() : exit.error) +
                           ") before joining the allreduce");
  }
  on_run_progress(self, run);
  if (run.ranks.all_done()) {
    // Its series leave /metrics (folded into the ended runs'), and `run`
    // moves into the history: not used after. What the history drops
    // leaves the sink too (files, links).
    self->send(self->state.config.sink, ended_atom::value,
               static_cast<std::int32_t>(StreamKind::run), std::vector<std::int32_t>{run.id});
    if (auto dropped = self->state.debug.retire(run.id); !dropped.empty())
      self->send(self->state.config.sink, forget_atom::value,
                 static_cast<std::int32_t>(StreamKind::run), std::move(dropped));
  }
  on_user_code_progress(self);
}

void on_run_wait_timer(Actor* self, WaiterId waiter) {
  DebugEffects out;
  self->state.course.on_run_wait_timer(waiter, debug_view(self->state), out);
  perform(self, out);
}

void on_debug_timer(Actor* self, std::int32_t kind, std::int32_t arg) {
  auto& st = self->state;
  switch (kind) {
    case kDebugStopTimer: {
      DebugEffects out;
      st.course.on_stop_timer(arg, st.job().grace + kStopSlack, debug_view(st), out);
      perform(self, out);
      break;
    }
    case kRunDeadlineTimer:
      // atl-burn's own phase monitor ends a stuck GPU phase; this is the
      // backstop for a burn wedged past it: stop its processes, say why.
      if (DebugRun* live = st.debug.live(arg); live && !live->ranks.all_done()) {
        DebugRun& run = *live;
        run.deadline_note = run.command + " ran past its deadline of " +
                            format_duration(run.deadline) + " and was stopped";
        st.log->warn("debug run {}: {}", run.id, run.deadline_note);
        std::set<std::string> pods;
        for (const auto& [rank, r] : run.ranks)
          if (!r.done) pods.insert(r.pod);
        for (const auto& pod : pods)
          if (const caf::actor* agent = st.agent_of(pod))
            self->send(*agent, stop_atom::value, StreamId::of_run(run.id, 0),
                       static_cast<std::int64_t>(st.job().grace.count()));
      }
      break;
    case kRecoverStartTimer: {
      DebugEffects out;
      st.course.on_recover_timer(arg, debug_view(st), out);
      perform(self, out);
      break;
    }
    case kStartTimer: {
      DebugEffects out;
      st.course.on_run_start_timer(arg, debug_view(st), out);
      perform(self, out);
      break;
    }
  }
}

void answer_owed_replies(Actor* self, const std::string& why) {
  auto& st = self->state;
  const std::int32_t failed = wire(ReplyCode::failed);
  DebugEffects out;
  st.course.abandon(why, debug_view(st), out);
  perform(self, out);
  st.sup->abandon_tasks(why);
  for (auto& reply : st.named.take_all_pending())
    if (reply.pending()) reply.deliver(failed, why);
}

}  // namespace atl::supervisor
