// The Supervisor's debug half: atlctl stop, run, check, burn and recover
// (the guide's debug protocol). When each is allowed is core's (allow);
// the operations' course is DebugCourse's and the runs' state DebugRuns';
// this half decides what a run starts where, performs the controller's part
// of stop and recover, follows the runs' processes and their allreduce
// rendezvous, and turns it all into the outbox's effects.
#include <algorithm>
#include <set>

#include "atl/core/env.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/core/rank_set.hpp"
#include "atl/core/split.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/os/child_process.hpp"
#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {

namespace {

constexpr std::string_view kHelloVerb = "rendezvous ";

debug::AnswerRun run_refused(const std::string& text) {
  return {0, ReplyCode::refused, text, RunStatus{}};
}
debug::AnswerRun run_usage(const std::string& text) {
  return {0, ReplyCode::usage, text, RunStatus{}};
}

// What status -v shows for a check or burn: the atlctl command it came from
// (the tool list and the 1 ms check round are atl's own business).
std::string node_tool_shown(const std::string& kind, const std::string& tools,
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

}  // namespace

RunStatus run_status(const DebugRun& run) {
  RunStatus out;
  out.run = run.id;
  out.done = run.ranks.all_done();
  out.tracked = run.tracked;
  out.ranks.reserve(run.ranks.size());
  for (const auto& [rank, r] : run.ranks) {
    RunRankStatus rs;
    rs.rank = rank;
    rs.pod = r.pod;
    rs.pid = r.pid;
    rs.started = r.started;
    rs.done = r.done;
    if (r.done) {
      rs.code = r.code;
      rs.signal = r.signal;
      rs.error = r.note;
    }
    out.ranks.push_back(std::move(rs));
  }
  out.deadline = run.deadline_note;
  return out;
}

// --- the course's view and effects -----------------------------------------------

DebugView Supervisor::debug_view() const {
  DebugView view;
  view.mode = job().mode;
  view.code = &code_.ranks();
  if (view.mode == JobMode::ray) view.ray = code_.ray_processes();
  view.run = [this](RunId id) -> const RankTable* {
    const DebugRun* run = runs_.find(id);
    return run ? &run->ranks : nullptr;
  };
  view.status = [this](RunId id) { return run_status(*runs_.find(id)); };
  view.gone = [this](RunId id) {
    return runs_.fate(id) == Fate::dropped
               ? dropped_record_line("run", id, settings_.finished_kept, "ended runs")
               : "there is no run " + std::to_string(id);
  };
  return view;
}

void Supervisor::perform(DebugEffects effects) {
  for (auto& e : effects) {
    if (auto* a = std::get_if<debug::Answer>(&e)) {
      out_.put(std::move(*a));
    } else if (auto* a = std::get_if<debug::AnswerRun>(&e)) {
      out_.put(std::move(*a));
    } else if (auto* t = std::get_if<debug::ArmStopTimer>(&e)) {
      out_.put(effect::Arm{kDebugStopTimer, t->stop, t->after, false});
    } else if (auto* r = std::get_if<debug::ArmRecoverTimer>(&e)) {
      out_.put(effect::Arm{kRecoverStartTimer, r->attempt, r->after, false});
    } else if (auto* t = std::get_if<debug::ArmRunStartTimer>(&e)) {
      out_.put(effect::Arm{kStartTimer, t->run, t->after, false});
    } else if (auto* w = std::get_if<debug::ArmWaitTimer>(&e)) {
      out_.put(effect::ArmWait{kRunWaitTimer, w->waiter, w->after});
    }
  }
}

// A rank of `run` started or ended: who waits for it may be answered.
void Supervisor::run_progress(const DebugRun& run) {
  // Per start/exit report (16,000 in a fan-out to 8,000 ranks): the view is
  // built only when an answer is due.
  if (!course_.run_answer_due(run.id, run.ranks)) return;
  DebugEffects out;
  course_.on_run_progress(run.id, debug_view(), out);
  perform(std::move(out));
}

// A user rank started or ended: a stop or a recover may be done.
void Supervisor::user_code_progress() {
  if (!course_.wants_progress()) return;  // per report: nothing to build
  DebugEffects out;
  course_.on_progress(debug_view(), out);
  perform(std::move(out));
}

void Supervisor::stop_run_on(RunId run, const std::set<std::string>& pods) {
  for (const auto& pod : pods)
    if (auto agent = agent_of(pod))
      out_.put(effect::StopStream{*agent, {StreamId::of_run(run, 0), job().grace.count()}});
}

// --- stop --------------------------------------------------------------------------

StopAnswer Supervisor::begin_stop() {
  if (auto allowed = allow(DebugCommand::stop, state()); !allowed)
    return {ReplyCode::refused, allowed.error(), 0};
  const JobState before = state();
  // Already stopped (or stopping): the caller waits for the same stop.
  if (before == JobState::debugStop) return {ReplyCode::ok, "", course_.latest_stop()};
  controller_.apply(JobEvent::debug_stop);
  StopTarget target{true, 0};
  if (before == JobState::command) {
    if (job().mode == JobMode::ray) {
      // The driver alone: Ray stays up.
      out_.put(effect::StopStream{head_, {StreamId::driver(), job().grace.count()}});
    } else {
      stop_user_code();
    }
  } else {  // debugCommand: end the tracked run; run -f commands keep going
    // A check stopped by an operator gives no verdict on its nodes.
    target = StopTarget{false, runs_.release_tracked()};
    end_run_everywhere(target.run);
  }
  // User code hears its stop warning (--stop-signal) first.
  const auto warning = before == JobState::command ? job().stop_warning.lead : Millis(0);
  DebugEffects out;
  const StopId op = course_.begin_stop(target, warning + job().grace + JobController::kStopSlack,
                                       debug_view(), out);
  perform(std::move(out));
  return {ReplyCode::ok, "", op};
}

// Every joined pod stops its processes of `run` (where it has none, nothing).
void Supervisor::end_run_everywhere(RunId run) {
  for (const auto& [pod, joined] : pods_.registry().joined_pods())
    out_.put(effect::StopStream{joined.agent, {StreamId::of_run(run, 0), job().grace.count()}});
}

// --- run, check, burn ------------------------------------------------------------------

// What a debug command on target `rank` starts from (env, directory): the
// rank's own launch, or in driver mode the worker pod's site.
std::optional<ProcessLaunch> Supervisor::debug_base(int rank) const {
  if (job().mode != JobMode::driver) {
    auto it = code_.launches().find(rank);
    if (it == code_.launches().end()) return std::nullopt;
    return debug_launch_from(it->second);
  }
  std::string pod = pod_of_rank(rank);
  if (pod.empty()) return std::nullopt;
  ProcessLaunch launch;
  launch.stream = StreamId::of_rank(rank);
  launch.env = to_env_strings(build_process_env(job(), {address_, job().job_id}, pod_site(pod)));
  launch.working_dir = job().working_dir;
  return launch;
}

// Starts `command_for(rank, pod)` on each of `ranks` with the rank's own
// environment and directory (plus `extra_env`); answered once every one started.
std::optional<debug::AnswerRun> Supervisor::launch_run(const RunPlan& plan, const Keep& keep) {
  // What atlctl stop ends gets its grace first: a run that starts beside
  // ranks still saving a checkpoint (or holding the GPUs) sees a busy node.
  if (plan.tracked && !course_.stop_complete(debug_view()))
    return run_refused("job is in state " + std::string(to_string(state())) + " but " +
                       course_.still_stopping(debug_view()) +
                       " are still stopping (in their grace); retry in a moment");
  // A pod deleted or lost while parked: refuse before anything starts.
  for (int rank : plan.ranks) {
    std::string pod = pod_of_rank(rank);
    if (!pods_.registry().joined(pod) || !debug_base(rank))
      return run_refused("pod " +
                         (pod.empty() ? std::string("of rank ") + std::to_string(rank) : pod) +
                         " is not in the job now (lost or deleted); retry once it is back");
  }
  const RunId id = runs_.next_id();
  std::vector<std::pair<std::int32_t, std::string>> ranks_on_pods;
  std::map<std::string, std::vector<ProcessLaunch>> per_pod;
  for (int rank : plan.ranks) {
    ProcessLaunch launch = *debug_base(rank);
    std::string pod = pod_of_rank(rank);
    launch.command = plan.command_for(rank, pod);
    launch.stream = StreamId::of_run(id, rank);
    launch.attempt = id;
    launch.control = plan.node_tool;  // atl-burn's allreduce meets its peers through us
    for (const auto& [k, v] : plan.extra_env)
      launch.env.push_back(k + "=" + v);  // later entries win
    ranks_on_pods.emplace_back(rank, pod);
    per_pod[pod].push_back(std::move(launch));
  }
  runs_.open(plan.tracked, plan.is_check, plan.label, plan.deadline, ranks_on_pods);
  DebugEffects out;
  course_.run_opened(id, keep(), out);
  perform(std::move(out));
  for (auto& [pod, launches] : per_pod)
    if (auto agent = agent_of(pod)) out_.put(effect::RunOn{*agent, {std::move(launches)}});
  if (plan.tracked) controller_.apply(JobEvent::debug_run);
  out_.put(Say{false, "debug run " + std::to_string(id) + (plan.tracked ? "" : " (-f)") + ": " +
                          plan.label});
  if (plan.deadline.count() > 0) out_.put(effect::Arm{kRunDeadlineTimer, id, plan.deadline, false});
  return std::nullopt;
}

std::optional<debug::AnswerRun> Supervisor::on(const RunCommand& request, const Keep& keep) {
  const std::string& command = request.command;
  const bool forced = request.forced;
  if (auto allowed = allow(DebugCommand::run, state(), forced); !allowed)
    return run_refused(allowed.error());
  if (command.find_first_not_of(" \t") == std::string::npos)
    return run_usage("run: no command given");
  // The targets: spmd's ranks, or one per worker pod (ray mode: its Ray node;
  // driver mode: the pod), never the head's own processes (driver, Ray's head).
  const int world = code_.rank_pods().empty()
                        ? static_cast<int>(controller_.active().size()) * streams_per_pod()
                        : static_cast<int>(code_.rank_pods().size());
  auto ranks = parse_rank_set(request.ranks, world);
  if (!ranks) return run_usage("-r: " + ranks.error());
  RunPlan plan;
  plan.ranks = std::move(*ranks);
  plan.command_for = [command](int, const std::string&) { return command; };
  plan.tracked = !forced;
  plan.label = command;
  return launch_run(plan, keep);
}

std::optional<debug::AnswerRun> Supervisor::on(const NodeToolRequest& r, const Keep& keep) {
  const DebugCommand command = r.kind == "check" ? DebugCommand::check : DebugCommand::burn;
  if (auto allowed = allow(command, state()); !allowed) return run_refused(allowed.error());
  EnvMap env;
  if (!r.env.empty()) {
    auto parsed = parse_env_spec(r.env);
    if (!parsed) return run_usage("-e: " + parsed.error());
    env = *parsed;
  }
  auto workers = parse_worker_list(r.workers);
  if (!workers) return run_usage("-w: " + workers.error());
  for (const auto& pod : *workers)
    if (!pods_.registry().joined(pod))
      return run_usage("-w: '" + pod + "' is not a pod of this job");
  // One process per node: on its first rank, with that rank's environment
  // (a pod the job's placement left without ranks has none to run on).
  const auto& active = controller_.active();
  const auto& rank_pods = code_.rank_pods();
  std::vector<int> ranks;
  for (size_t node = 0; node < active.size(); ++node) {
    const std::string& pod = active[node];
    bool chosen = workers->empty();
    for (const auto& w : *workers) chosen |= w == pod;
    if (!chosen) continue;
    int first = -1;
    if (rank_pods.empty()) {
      first = static_cast<int>(node) * streams_per_pod();
    } else if (auto it = std::find(rank_pods.begin(), rank_pods.end(), pod);
               it != rank_pods.end()) {
      first = static_cast<int>(it - rank_pods.begin());
    }
    if (first >= 0) {
      ranks.push_back(first);
    } else if (!workers->empty()) {
      return run_usage("-w: pod '" + pod + "' runs no rank (the job's placement left it idle)");
    }
  }
  // Allreduce members meet through the supervisor (process_note): member i
  // is the i-th chosen node, member 0's pod is the MasterAddr.
  std::vector<std::string> chosen_pods;
  for (int rank : ranks) chosen_pods.push_back(pod_of_rank(rank));
  std::vector<std::string> steps;
  for (std::string_view step : split_list(r.tools)) steps.emplace_back(step);
  bool reduces = false;
  for (const auto& step : steps) {
    if (step != "gemm" && step != "transfer" && step != "check" && step != "allreduce" &&
        step != "local")
      return run_usage("unknown burn step '" + step + "'");
    reduces |= step == "allreduce" || step == "local";
  }
  // --sizes: checked again here (any client may send it), and handed on in
  // atl-burn's list form (digits and K/M/G: safe in the shell line).
  std::string sizes;
  int size_count = 0;
  if (!r.sizes.empty()) {
    if (!reduces)
      return run_usage("--sizes: only allreduce burns (-t local, global, batch) take sizes");
    auto parsed = gpu::parse_size_spec(r.sizes);
    if (!parsed) return run_usage("--sizes: " + parsed.error());
    sizes = gpu::format_size_list(*parsed);
    size_count = static_cast<int>(parsed->size());
  }
  auto step_duration = parse_duration(r.duration);
  if (!step_duration || step_duration->count() <= 0)
    return run_usage("-d: " +
                     (step_duration ? std::string("must be positive") : step_duration.error()));
  // The shell line gets the duration as atl formats it, never the text sent.
  const std::string dur = format_duration(*step_duration);
  std::vector<std::string_view> step_views(steps.begin(), steps.end());
  RunPlan plan;
  plan.ranks = ranks;
  plan.command_for = [this, steps, chosen_pods, dur, sizes](int, const std::string& pod) {
    size_t index = 0;
    while (chosen_pods[index] != pod) ++index;
    const NodeInfo& info = pods_.registry().at(pod).info;
    // Every step runs even if an earlier one failed (allreduce peers wait for
    // each other); the exit status is the worst of them.
    std::string cmd = "s=0";
    for (const auto& step : steps) {
      // "local": an allreduce of each node on its own (no rendezvous).
      cmd += "; atl-burn " + (step == "local" ? std::string("allreduce --local") : step) + " -d " +
             dur + " --pod " + pod + " --expect-gpus " + std::to_string(info.gpus);
      if (step == "allreduce")
        cmd += " --index " + std::to_string(index) + " --host " + info.address + " --master " +
               chosen_pods.front();
      if ((step == "allreduce" || step == "local") && !sizes.empty()) cmd += " --sizes " + sizes;
      cmd += " || s=1";
    }
    return cmd + "; exit $s";
  };
  plan.extra_env = std::move(env);
  plan.tracked = true;
  plan.label = node_tool_shown(r.kind, r.tools, dur, r.workers);
  plan.node_tool = true;
  plan.is_check = command == DebugCommand::check;
  plan.deadline = gpu::node_tool_deadline(step_views, *step_duration, size_count);
  return launch_run(plan, keep);
}

std::optional<debug::AnswerRun> Supervisor::run_now(RunId id) const {
  const DebugRun* found = runs_.find(id);
  if (!found) {
    if (runs_.fate(id) == Fate::dropped)
      return debug::AnswerRun{0, ReplyCode::failed,
                              dropped_record_line("run", id, settings_.finished_kept, "ended runs"),
                              RunStatus{}};
    return run_usage("there is no run " + std::to_string(id));
  }
  if (found->ranks.all_done()) return debug::AnswerRun{0, ReplyCode::ok, "", run_status(*found)};
  return std::nullopt;
}

void Supervisor::await_run(RunId id, ReplyId reply, Millis timeout) {
  DebugEffects out;
  course_.await_run(id, reply, timeout, out);
  perform(std::move(out));
}

// --- recover -----------------------------------------------------------------------------

std::optional<Answer> Supervisor::on(const Recover&, const Keep& keep) {
  if (auto allowed = allow(DebugCommand::recover, state()); !allowed)
    return Answer{0, ReplyCode::refused, allowed.error()};
  // Ray mode: the driver alone starts again on a Ray cluster still up.
  auto scope = course_.recover_scope(debug_view());
  if (!scope) return Answer{0, ReplyCode::refused, scope.error()};
  if (*scope == LaunchScope::everything) {
    // Pods deleted or lost while parked may be back with new addresses, or be
    // replaced by spares: the layout is made anew (no restart is counted).
    if (auto chosen = controller_.select_active(); !chosen)
      return Answer{0, ReplyCode::refused,
                    "job is in state debugStop but cannot recover yet: " + chosen.error() +
                        "; retry recover once the pods are back"};
    if (!plan_user_code()) return Answer{0, ReplyCode::failed, controller_.failure()};
  }
  code_.next_attempt();
  controller_.apply(JobEvent::recover);
  controller_.recovered(code_.attempt());
  out_.put(Say{false, (*scope == LaunchScope::driver_only
                           ? "recovering: the driver starts again on the running Ray cluster "
                             "(attempt "
                           : "recovering: user code restarts from scratch (attempt ") +
                          std::to_string(code_.attempt()) + ")"});
  launch_user_code(*scope);
  DebugEffects out;
  course_.recovering(keep(), code_.attempt(), debug_view(), out);
  perform(std::move(out));
  return std::nullopt;
}

// --- the runs' processes -------------------------------------------------------------------

void Supervisor::run_started(const ProcessStarted& started) {
  DebugRun* run = runs_.find(started.stream.run);
  if (!run) return;
  run->ranks.mark_started(started.stream.rank, started.pid);
  run_progress(*run);
}

void Supervisor::run_ended(const ProcessExit& exit) {
  const StreamId& id = exit.stream;
  DebugRun* live = runs_.live(id.run);  // an ended run takes no more ends
  if (!live) return;
  DebugRun& run = *live;
  if (!run.ranks.mark_done(id.rank, exit.code, exit.signal, exit.error)) return;
  auto rank = run.ranks.find(id.rank);
  if (run.is_check && run.stopped) {
    out_.put(Say{false, "check run " + std::to_string(run.id) + " on " + rank->second.pod +
                            " stopped before its verdict: no taint"});
  } else if (run.is_check) {
    os::ExitStatus status{exit.code, exit.signal};
    bool passed = exit.error.empty() && status.success();
    std::string reason = !exit.error.empty() ? exit.error : status.describe();
    runs_.record_verdict(rank->second.pod, run.id, passed, reason);
    if (!passed)
      controller_.taint_platform(
          rank->second.pod, "failed atlctl check (run " + std::to_string(run.id) + "): " + reason);
  }
  if (!run.hellos.empty() && !run.hellos.count(id.rank)) {
    os::ExitStatus status{exit.code, exit.signal};
    abandon_rendezvous(run, rank->second.pod + " ended (" +
                                (exit.error.empty() ? status.describe() : exit.error) +
                                ") before joining the allreduce");
  }
  run_progress(run);
  if (run.ranks.all_done()) {
    // Its series leave /metrics (folded into the ended runs'), and `run`
    // moves into the history: not used after. What the history drops
    // leaves the sink too (files, links).
    out_.put(effect::StreamsEnded{StreamKind::run, {run.id}});
    if (auto dropped = runs_.retire(run.id); !dropped.empty())
      out_.put(effect::ForgetStreams{StreamKind::run, std::move(dropped)});
  }
  user_code_progress();
}

// --- the allreduce rendezvous of burn and check ------------------------------------------
// Each chosen node's burn process writes a hello on its control channel; its
// Executor forwards it as a ProcessNote. Once every member of the run said
// hello, gpu::plan_rendezvous decides (the TCP ring's addresses, or the NCCL
// unique id member 0 generated and each member's ranks; or one refusal,
// e.g. two ranks on one GPU) and each member gets its answer through the
// Executor that forwarded its hello.

void Supervisor::answer_members(DebugRun& run,
                                const std::function<gpu::RendezvousReply(const RunMember&)>& to) {
  run.rendezvous_answered = true;
  for (auto& [rank, member] : run.hellos)
    out_.put(effect::ControlReply{member.executor, gpu::encode_reply(to(member))});
}

void Supervisor::abandon_rendezvous(DebugRun& run, const std::string& why) {
  if (run.rendezvous_answered || run.hellos.empty()) return;
  out_.put(Say{true, "run " + std::to_string(run.id) + ": allreduce rendezvous abandoned: " + why});
  gpu::RendezvousReply refusal;
  refusal.error = why;
  answer_members(run, [&](const RunMember&) { return refusal; });
}

bool Supervisor::process_note(const ProcessNote& note, ExecutorRef from) {
  if (note.stream.kind == StreamKind::task) {
    task_note(note.stream.run, note.line);
    return false;
  }
  const bool of_a_run = note.stream.kind == StreamKind::run;
  DebugRun* live = of_a_run ? runs_.live(note.stream.run) : nullptr;
  if (!live || !live->ranks.count(note.stream.rank)) {
    out_.put(
        Say{true, "control line from " + stream_name(note.stream) + " of no current run ignored"});
    return false;
  }
  DebugRun& run = *live;
  auto answer_one = [&](const std::string& why) {
    gpu::RendezvousReply refusal;
    refusal.error = why;
    out_.put(effect::ControlReply{from, gpu::encode_reply(refusal)});
    return false;
  };
  if (note.line.rfind(gpu::kFigureVerb, 0) == 0) {
    // A burn's figure: the latest per pod, GPU, metric and size for the
    // metrics; a round's also in the run's series, for the dashboard's charts.
    auto figure = gpu::decode_figure(std::string_view(note.line).substr(gpu::kFigureVerb.size()));
    if (!figure) {
      out_.put(Say{true, stream_name(note.stream) + " on " + note.pod + ": " + figure.error()});
      return false;
    }
    burn_figures_[{note.pod, figure->gpu, figure->metric, figure->size}] = figure->value;
    if (figure->round > 0)
      runs_.add_figure(run.id, {note.pod, figure->gpu, figure->metric, figure->size, figure->round,
                                figure->value});
    return false;
  }
  if (note.line.rfind(kHelloVerb, 0) != 0) {
    out_.put(
        Say{true, stream_name(note.stream) + " on " + note.pod + ": unknown control line ignored"});
    return answer_one("the supervisor does not know this request");
  }
  auto hello = gpu::decode_hello(std::string_view(note.line).substr(kHelloVerb.size()));
  if (!hello) return answer_one(hello.error());
  if (run.rendezvous_answered) return answer_one("the allreduce of this run already started");
  hello->pod = note.pod;  // the supervisor's name for it, whatever the process said
  run.hellos[note.stream.rank] = {std::move(*hello), from};
  for (const auto& [rank, record] : run.ranks) {
    if (record.done && !run.hellos.count(rank)) {
      abandon_rendezvous(run, record.pod + " ended before joining the allreduce");
      return true;
    }
  }
  if (run.hellos.size() < run.ranks.size()) return true;
  std::vector<gpu::RendezvousHello> hellos;
  for (const auto& [rank, member] : run.hellos) hellos.push_back(member.hello);
  auto plan = gpu::plan_rendezvous(std::move(hellos));
  if (!plan) {
    abandon_rendezvous(run, plan.error());
    return true;
  }
  out_.put(Say{false, "run " + std::to_string(run.id) + ": allreduce of " +
                          std::to_string(run.hellos.size()) + " members starts (" +
                          std::to_string(plan->front().world) + " ranks)"});
  // plan_rendezvous accepted the indices: 0..n-1, each once.
  answer_members(run, [&](const RunMember& m) { return plan->at(m.hello.index); });
  return true;
}

// --- the debug timers and the end ------------------------------------------------------

bool Supervisor::debug_timer(std::int32_t kind, std::int32_t arg) {
  DebugEffects out;
  switch (kind) {
    case kDebugStopTimer:
      course_.on_stop_timer(arg, job().grace + JobController::kStopSlack, debug_view(), out);
      break;
    case kRecoverStartTimer:
      course_.on_recover_timer(arg, debug_view(), out);
      break;
    case kStartTimer:
      course_.on_run_start_timer(arg, debug_view(), out);
      break;
    case kRunDeadlineTimer:
      // atl-burn's own phase monitor ends a stuck GPU phase; this is the
      // backstop for a burn wedged past it: stop its processes, say why.
      if (DebugRun* live = runs_.live(arg); live && !live->ranks.all_done()) {
        DebugRun& run = *live;
        run.deadline_note = run.command + " ran past its deadline of " +
                            format_duration(run.deadline) + " and was stopped";
        out_.put(Say{true, "debug run " + std::to_string(run.id) + ": " + run.deadline_note});
        std::set<std::string> pods;
        for (const auto& [rank, r] : run.ranks)
          if (!r.done) pods.insert(r.pod);
        stop_run_on(run.id, pods);
      }
      break;
    default:
      return false;
  }
  perform(std::move(out));
  return true;
}

std::optional<Answer> Supervisor::on(const StopWait& request, const Keep& keep) {
  const StopId op = request.op;
  switch (course_.stop_state(op)) {
    case DebugCourse::StopWait::unknown:
      return Answer{0, ReplyCode::usage, "there is no stop " + std::to_string(op)};
    case DebugCourse::StopWait::over:
      return Answer{0, ReplyCode::ok, {}};
    case DebugCourse::StopWait::pending:
      break;
  }
  course_.await_stop(op, keep());
  return std::nullopt;
}

std::optional<debug::AnswerRun> Supervisor::on(const RunWait& request, const Keep& keep) {
  if (auto now = run_now(request.run)) return now;
  await_run(request.run, keep(), Millis{request.timeout_ms});
  return std::nullopt;
}

void Supervisor::abandon_owed(const std::string& why) {
  DebugEffects out;
  course_.abandon(why, debug_view(), out);
  perform(std::move(out));
  abandon_tasks(why);
  FeedEffects watches;  // status -w hears the feed as it is (the job's end is in it)
  feed_.abandon(watches);
  perform(std::move(watches));
  for (ReplyId reply : named_.take_all_pending()) out_.put(Answer{reply, ReplyCode::failed, why});
  for (auto& purpose : looks_.take_all())
    if (auto* d = std::get_if<DiagnoseLook>(&purpose))
      out_.put(Answer{d->reply, ReplyCode::failed, why});
}

}  // namespace atl::supervisor
