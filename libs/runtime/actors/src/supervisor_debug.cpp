// atlctl's debug commands on the JobSupervisor: stop, run, recover. The rules
// of when each is allowed live in core (atl::allow); this file does the work.
#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
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

constexpr auto kStartTimeout = std::chrono::seconds(30);
constexpr std::int32_t kRecoverStart = 0;  // kStartTimer's arg for a recover

Result refused(const Status& status) { return {std::int32_t{3}, status.error()}; }
Result usage(const std::string& text) { return {std::int32_t{2}, text}; }
Result ok(const std::string& text = "") { return {std::int32_t{0}, text}; }

// What a stop of user code ends: every rank, or in ray mode the driver alone
// (the Ray cluster stays up for debugging).
bool stops_with_user_code(const State& st, std::int32_t stream) {
  return st.job().mode != JobMode::ray || stream == kDriverStream;
}

bool user_code_stopped(const State& st) {
  if (st.job().mode != JobMode::ray) return st.ranks.all_done();
  auto driver = st.ranks.find(kDriverStream);  // ray mode: the driver alone
  return driver == st.ranks.end() || driver->second.done;
}

bool stop_complete(const State& st) {
  if (st.stopping_run == 0) return user_code_stopped(st);
  if (st.stopping_run > 0) {
    auto it = st.runs.find(st.stopping_run);
    return it == st.runs.end() || it->second.ranks.all_done();
  }
  return true;
}

void answer_stop_waiters(Actor* self, std::int32_t code, const std::string& text) {
  auto& st = self->state;
  for (auto& p : st.stop_waiters) p.deliver(code, text);
  st.stop_waiters.clear();
  st.stopping_run = -1;
}

void check_stop(Actor* self) {
  if (!self->state.stop_waiters.empty() && stop_complete(self->state))
    answer_stop_waiters(self, 0, "");
}

// "ranks 0,3" (or "the driver") still starting (`want_started`) or running.
std::string pending_ranks(const RankTable& ranks, bool want_started,
                          const std::function<bool(std::int32_t)>& counts = nullptr) {
  std::string out;
  bool driver = false;
  for (const auto& [rank, r] : ranks) {
    bool pending = want_started ? (!r.started && !r.done) : !r.done;
    if (!pending || (counts && !counts(rank))) continue;
    if (rank == kDriverStream) {
      driver = true;
      continue;
    }
    out += (out.empty() ? "" : ",") + (rank == kRayHeadStream ? "ray-head" : std::to_string(rank));
  }
  if (out.empty()) return driver ? "the driver" : "ranks (none)";
  return (driver ? "the driver and ranks " : "ranks ") + out;
}

nlohmann::json run_status(const DebugRun& run) {
  nlohmann::json j{{"run", run.id}, {"done", run.ranks.all_done()}, {"tracked", run.tracked}};
  j["ranks"] = nlohmann::json::array();
  for (const auto& [rank, r] : run.ranks) {
    nlohmann::json rj{{"rank", rank},         {"stream", debug_stream(run.id, rank)},
                      {"pod", r.pod},         {"pid", r.pid},
                      {"started", r.started}, {"done", r.done}};
    if (r.done) {
      rj["code"] = r.code;
      rj["signal"] = r.signal;
      if (!r.note.empty()) rj["error"] = r.note;
    }
    j["ranks"].push_back(rj);
  }
  if (!run.deadline_note.empty()) j["deadline"] = run.deadline_note;
  return j;
}

void maybe_answer_start(DebugRun& run) {
  if (run.start_answered || !run.ranks.all_started()) return;
  run.start_answered = true;
  run.started_reply.deliver(
      std::int32_t{0},
      run_status(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void answer_run_waiters(DebugRun& run) {
  std::string status =
      run_status(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (auto& p : run.waiters) p.deliver(std::int32_t{0}, status);
  run.waiters.clear();
}

}  // namespace

Result begin_stop(Actor* self) {
  auto& st = self->state;
  if (auto allowed = allow(DebugCommand::stop, st.state()); !allowed) return refused(allowed);
  JobState before = st.state();
  if (before == JobState::debugStop) return ok("already stopped");
  apply(self, JobEvent::debug_stop);
  auto grace = static_cast<std::int64_t>(st.job().grace.count());
  if (before == JobState::command) {
    st.stopping_run = 0;
    if (st.job().mode == JobMode::ray) {
      if (st.driver) self->send(st.driver, stop_atom::value, grace);  // Ray stays up
    } else {
      stop_user_code(self);
    }
  } else {  // debugCommand: end the tracked run; run -f commands keep going
    st.stopping_run = st.tracked_run;
    for (const auto& [pod, node] : st.nodes)
      self->send(node.agent, stop_atom::value, st.tracked_run, grace);
    st.tracked_run = 0;
  }
  self->delayed_send(self, st.job().grace + kStopSlack, timeout_atom::value,
                     static_cast<std::int32_t>(kDebugStopTimer), ++st.stop_generation);
  return ok();
}

Result await_stop(Actor* self) {
  auto& st = self->state;
  if (stop_complete(st)) {
    st.stopping_run = -1;
    return ok();
  }
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  st.stop_waiters.push_back(promise);
  return promise;
}

namespace {

// What a debug command on target `rank` starts from (env, directory): the
// rank's own launch, or in driver mode the worker pod's site.
std::optional<RankLaunch> debug_base(const State& st, int rank) {
  if (st.job().mode != JobMode::driver) {
    auto it = st.launches.find(rank);
    if (it == st.launches.end()) return std::nullopt;
    return it->second;
  }
  std::string pod = pod_of_rank(st, rank);
  if (pod.empty()) return std::nullopt;
  RankLaunch launch;
  launch.stream = rank;
  launch.env =
      to_env_strings(build_process_env(st.job(), {st.address, st.job().job_id}, pod_site(st, pod)));
  launch.working_dir = st.job().working_dir;
  return launch;
}

// Starts `command_for(rank)` on each of `ranks` with the rank's own environment
// and directory (plus `extra_env`); answers once every one has started.
template <class CommandFor>
Result launch_run(Actor* self, const std::vector<int>& ranks, CommandFor command_for,
                  const EnvMap& extra_env, bool tracked, const std::string& label,
                  bool node_tool = false, bool is_check = false,
                  std::chrono::milliseconds deadline = std::chrono::milliseconds(0)) {
  auto& st = self->state;
  // A pod deleted or lost while parked: refuse before anything starts.
  for (int rank : ranks) {
    std::string pod = pod_of_rank(st, rank);
    if (!st.nodes.count(pod) || !debug_base(st, rank))
      return refused(
          make_error("pod " + (pod.empty() ? std::string("of rank ") + std::to_string(rank) : pod) +
                     " is not in the job now (lost or deleted); retry once it is back"));
  }
  DebugRun run;
  run.id = st.next_run++;
  run.tracked = tracked;
  run.is_check = is_check;
  run.command = label;
  run.deadline = deadline;
  std::map<std::string, std::vector<RankLaunch>> per_pod;
  for (int rank : ranks) {
    RankLaunch launch = *debug_base(st, rank);
    std::string pod = pod_of_rank(st, rank);
    launch.command = command_for(rank, pod);
    launch.stream = debug_stream(run.id, rank);
    launch.attempt = run.id;
    launch.control = node_tool;  // atl-burn's allreduce meets its peers through us
    for (const auto& [k, v] : extra_env) launch.env.push_back(k + "=" + v);  // later entries win
    run.ranks.add(rank, pod);
    st.run_ranks_by_pod[pod].emplace_back(run.id, rank);
    per_pod[pod].push_back(std::move(launch));
  }
  for (auto& [pod, launches] : per_pod)
    self->send(st.nodes.at(pod).agent, run_atom::value, run.id, std::move(launches),
               st.config.sink);
  if (run.tracked) {
    apply(self, JobEvent::debug_run);
    st.tracked_run = run.id;
  }
  st.log->info("debug run {}{}: {}", run.id, tracked ? "" : " (-f)", label);
  run.started_reply = self->make_response_promise<std::int32_t, std::string>();
  auto reply = run.started_reply;
  auto id = run.id;
  st.runs.emplace(id, std::move(run));
  self->delayed_send(self, kStartTimeout, timeout_atom::value,
                     static_cast<std::int32_t>(kStartTimer), id);
  if (deadline.count() > 0)
    self->delayed_send(self, deadline, timeout_atom::value,
                       static_cast<std::int32_t>(kRunDeadlineTimer), id);
  return reply;
}

}  // namespace

Result start_run(Actor* self, const std::string& rank_text, const std::string& command,
                 bool forced) {
  auto& st = self->state;
  if (auto allowed = allow(DebugCommand::run, st.state(), forced); !allowed)
    return refused(allowed);
  if (command.find_first_not_of(" \t") == std::string::npos) return usage("run: no command given");
  // The targets: spmd's ranks, or one per worker pod (ray mode: its Ray node;
  // driver mode: the pod), never the head's own processes (driver, Ray's head).
  const int world = st.rank_pods.empty() ? static_cast<int>(st.active.size()) * streams_per_pod(st)
                                         : static_cast<int>(st.rank_pods.size());
  auto ranks = parse_rank_set(rank_text, world);
  if (!ranks) return usage("-r: " + ranks.error());
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

Result start_node_tool(Actor* self, const std::string& kind, const std::string& tools,
                       const std::string& duration, const std::string& env_text,
                       const std::string& worker_text, const std::string& sizes_text) {
  auto& st = self->state;
  const DebugCommand command = kind == "check" ? DebugCommand::check : DebugCommand::burn;
  if (auto allowed = allow(command, st.state()); !allowed) return refused(allowed);
  EnvMap env;
  if (!env_text.empty()) {
    auto parsed = parse_env_spec(env_text);
    if (!parsed) return usage("-e: " + parsed.error());
    env = *parsed;
  }
  auto workers = parse_worker_list(worker_text);
  if (!workers) return usage("-w: " + workers.error());
  for (const auto& pod : *workers) {
    if (!st.nodes.count(pod)) return usage("-w: '" + pod + "' is not a pod of this job");
  }
  // One process per node: on its first rank, with that rank's environment
  // (a pod the job's placement left without ranks has none to run on).
  std::vector<int> ranks;
  for (size_t node = 0; node < st.active.size(); ++node) {
    const std::string& pod = st.active[node];
    bool chosen = workers->empty();
    for (const auto& w : *workers) chosen |= w == pod;
    if (!chosen) continue;
    int first = -1;
    if (st.rank_pods.empty()) {
      first = static_cast<int>(node) * streams_per_pod(st);
    } else {
      auto it = std::find(st.rank_pods.begin(), st.rank_pods.end(), pod);
      if (it != st.rank_pods.end()) first = static_cast<int>(it - st.rank_pods.begin());
    }
    if (first >= 0) {
      ranks.push_back(first);
    } else if (!workers->empty()) {
      return usage("-w: pod '" + pod + "' runs no rank (the job's placement left it idle)");
    }
  }
  // Allreduce members meet through the supervisor (supervisor_rendezvous.cpp):
  // member i is the i-th chosen node, member 0's pod is the MasterAddr.
  std::vector<std::string> chosen_pods;
  for (int rank : ranks) chosen_pods.push_back(pod_of_rank(st, rank));
  const std::vector<std::string_view> steps = split_list(tools);
  bool reduces = false;
  for (std::string_view step : steps) {
    if (step != "gemm" && step != "transfer" && step != "check" && step != "allreduce" &&
        step != "local")
      return usage("unknown burn step '" + std::string(step) + "'");
    reduces |= step == "allreduce" || step == "local";
  }
  // --sizes: checked again here (any client may send it), and handed on in
  // atl-burn's list form (digits and K/M/G: safe in the shell line).
  std::string sizes;
  int size_count = 0;
  if (!sizes_text.empty()) {
    if (!reduces)
      return usage("--sizes: only allreduce burns (-t local, global, batch) take sizes");
    auto parsed = gpu::parse_size_spec(sizes_text);
    if (!parsed) return usage("--sizes: " + parsed.error());
    sizes = gpu::format_size_list(*parsed);
    size_count = static_cast<int>(parsed->size());
  }
  auto step_duration = parse_duration(duration);
  if (!step_duration || step_duration->count() <= 0)
    return usage("-d: " +
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
             dur + " --pod " + pod + " --expect-gpus " + std::to_string(st.nodes.at(pod).info.gpus);
      if (step == "allreduce") {
        cmd += " --index " + std::to_string(index) + " --host " + st.nodes.at(pod).info.address +
               " --master " + chosen_pods.front();
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

Result await_run(Actor* self, std::int32_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  auto it = st.runs.find(id);
  if (it == st.runs.end()) return usage("there is no run " + std::to_string(id));
  if (it->second.ranks.all_done())
    return ok(
        run_status(it->second).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  it->second.waiters.push_back(promise);
  self->delayed_send(self, std::chrono::milliseconds(std::max<std::int64_t>(timeout_ms, 1)),
                     timeout_atom::value, static_cast<std::int32_t>(kRunWaitTimer), id);
  return promise;
}

Result recover(Actor* self) {
  auto& st = self->state;
  if (auto allowed = allow(DebugCommand::recover, st.state()); !allowed) return refused(allowed);
  // Ray mode: the driver alone starts again on a Ray cluster still up.
  LaunchScope scope = LaunchScope::everything;
  if (st.job().mode == JobMode::ray) {
    switch (ray_recovery(ray_processes(st))) {
      case RayRecovery::driver_only:
        scope = LaunchScope::driver_only;
        break;
      case RayRecovery::whole_cluster:
        break;
      case RayRecovery::driver_stopping:
      case RayRecovery::cluster_stopping:
        return refused(make_error("job is in state debugStop but " +
                                  pending_ranks(st.ranks, false) +
                                  " are still stopping; retry recover in a moment"));
    }
  } else if (!stop_complete(st) || !st.ranks.all_done()) {
    return refused(make_error("job is in state debugStop but " + pending_ranks(st.ranks, false) +
                              " are still stopping; retry recover in a moment"));
  }
  if (scope == LaunchScope::everything) {
    // Pods deleted or lost while parked may be back with new addresses, or be
    // replaced by spares: the layout is made anew (no restart is counted).
    if (auto chosen = select_active(self); !chosen)
      return refused(make_error("job is in state debugStop but cannot recover yet: " +
                                chosen.error() + "; retry recover once the pods are back"));
    if (!plan_user_code(self)) return {std::int32_t{1}, st.failure};
  }
  ++st.attempt;
  apply(self, JobEvent::recover);
  st.log->info(scope == LaunchScope::driver_only
                   ? "recovering: the driver starts again on the running Ray cluster (attempt {})"
                   : "recovering: user code restarts from scratch (attempt {})",
               st.attempt);
  launch_user_code(self, scope);
  st.recover_reply = self->make_response_promise<std::int32_t, std::string>();
  st.recover_pending = true;
  self->delayed_send(self, kStartTimeout, timeout_atom::value,
                     static_cast<std::int32_t>(kStartTimer), kRecoverStart);
  auto reply = st.recover_reply;
  on_user_code_progress(self);  // nothing to start (no ranks) answers at once
  return reply;
}

void on_user_code_progress(Actor* self) {
  auto& st = self->state;
  if (st.recover_pending && st.ranks.all_started()) {
    st.recover_pending = false;
    st.recover_reply.deliver(std::int32_t{0}, std::string());
  }
  check_stop(self);
}

void on_debug_started(Actor* self, const RankStarted& started, DebugStreamId id) {
  auto it = self->state.runs.find(id.run);
  if (it == self->state.runs.end()) return;
  it->second.ranks.mark_started(id.rank, started.pid);
  maybe_answer_start(it->second);
}

void on_debug_exit(Actor* self, const RankExit& exit, DebugStreamId id) {
  auto it = self->state.runs.find(id.run);
  if (it == self->state.runs.end()) return;
  DebugRun& run = it->second;
  if (!run.ranks.mark_done(id.rank, exit.code, exit.signal, exit.error)) return;
  auto rank = run.ranks.find(id.rank);
  if (run.is_check) {
    os::ExitStatus status{exit.code, exit.signal};
    bool passed = exit.error.empty() && status.success();
    std::string reason = !exit.error.empty() ? exit.error : status.describe();
    self->state.check_verdicts[rank->second.pod] = {run.id, passed, passed ? "" : reason};
    if (!passed)
      taint_platform(self, rank->second.pod,
                     "failed atlctl check (run " + std::to_string(run.id) + "): " + reason);
  }
  if (!run.hellos.empty() && !run.hellos.count(id.rank)) {
    os::ExitStatus status{exit.code, exit.signal};
    abandon_rendezvous(self, run,
                       rank->second.pod + " ended (" +
                           (exit.error.empty() ? status.describe() : exit.error) +
                           ") before joining the allreduce");
  }
  maybe_answer_start(run);
  if (run.ranks.all_done()) answer_run_waiters(run);
  check_stop(self);
}

void on_debug_timer(Actor* self, std::int32_t kind, std::int32_t arg) {
  auto& st = self->state;
  switch (kind) {
    case kDebugStopTimer:
      if (arg == st.stop_generation && !st.stop_waiters.empty()) {
        std::string late = st.stopping_run == 0
                               ? pending_ranks(st.ranks, false,
                                               [&](std::int32_t stream) {
                                                 return stops_with_user_code(st, stream);
                                               })
                               : pending_ranks(st.runs.at(st.stopping_run).ranks, false);
        answer_stop_waiters(self, 1,
                            late + " did not report their end within " +
                                format_duration(st.job().grace + kStopSlack));
      }
      break;
    case kRunWaitTimer:
      if (auto it = st.runs.find(arg); it != st.runs.end()) answer_run_waiters(it->second);
      break;
    case kRunDeadlineTimer:
      // atl-burn's own phase monitor ends a stuck GPU phase; this is the
      // backstop for a burn wedged past it: stop its processes, say why.
      if (auto it = st.runs.find(arg); it != st.runs.end() && !it->second.ranks.all_done()) {
        DebugRun& run = it->second;
        run.deadline_note = run.command + " ran past its deadline of " +
                            format_duration(run.deadline) + " and was stopped";
        st.log->warn("debug run {}: {}", run.id, run.deadline_note);
        std::set<std::string> pods;
        for (const auto& [rank, r] : run.ranks)
          if (!r.done) pods.insert(r.pod);
        for (const auto& pod : pods)
          if (auto n = st.nodes.find(pod); n != st.nodes.end())
            self->send(n->second.agent, stop_atom::value, run.id,
                       static_cast<std::int64_t>(st.job().grace.count()));
      }
      break;
    case kStartTimer:
      if (arg == kRecoverStart && st.recover_pending) {
        st.recover_pending = false;
        st.recover_reply.deliver(std::int32_t{1}, pending_ranks(st.ranks, true) +
                                                      " did not start within " +
                                                      format_duration(kStartTimeout));
      } else if (auto it = st.runs.find(arg); it != st.runs.end() && !it->second.start_answered) {
        it->second.start_answered = true;
        it->second.started_reply.deliver(std::int32_t{1}, pending_ranks(it->second.ranks, true) +
                                                              " did not start within " +
                                                              format_duration(kStartTimeout));
      }
      break;
  }
}

std::string checks_json(const State& st) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [pod, v] : st.check_verdicts) {
    j[pod] = {{"run", v.run}, {"passed", v.passed}};
    if (!v.passed) j[pod]["reason"] = v.reason;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string runs_json(const State& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [id, run] : st.runs) {
    j.push_back({{"run", id},
                 {"command", run.command},
                 {"tracked", run.tracked},
                 {"ranks", run.ranks.size()},
                 {"done", run.ranks.all_done()}});
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void answer_owed_replies(Actor* self, const std::string& why) {
  auto& st = self->state;
  const std::int32_t failed = 1;
  answer_stop_waiters(self, failed, why);
  if (st.recover_pending) {
    st.recover_pending = false;
    if (st.recover_reply.pending()) st.recover_reply.deliver(failed, why);
  }
  for (auto& [id, task] : st.tasks) {
    if (!task.start_answered && task.started_reply.pending())
      task.started_reply.deliver(failed, why);
    task.start_answered = true;
  }
  for (auto& [serial, w] : st.task_waiters)
    if (w.reply.pending()) w.reply.deliver(failed, why);
  st.task_waiters.clear();
  for (auto& [name, a] : st.named) {
    for (auto& [id, p] : a.pending)
      if (p.pending()) p.deliver(failed, why);
    a.pending.clear();
  }
  for (auto& [id, run] : st.runs) {
    if (!run.start_answered) {
      run.start_answered = true;
      if (run.started_reply.pending()) run.started_reply.deliver(failed, why);
    }
    for (auto& p : run.waiters)
      if (p.pending()) p.deliver(failed, why);
    run.waiters.clear();
  }
}

}  // namespace atl::supervisor
