// The driver's tasks on the JobSupervisor: a command on a worker pod (in a
// placement group's bundle, or on a pod), with its own stream of output, its
// exit status, and a life no longer than its bundle's or its driver's.
// Each task is its own run on the pod's NodeAgent (run id = its stream).
#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/core/log_stream.hpp"
#include "atl/core/quote.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/os/child_process.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kTaskStartTimeout = std::chrono::seconds(30);
// A task's result travels in the supervisor's memory and in every answer
// about it: a few MiB at most (bigger data belongs in shared storage).
constexpr size_t kMaxResultBytes = 8 << 20;
constexpr std::string_view kResultVerb = "result ";

Result refused(const std::string& text) { return {wire(ReplyCode::refused), text}; }
TaskResult task_usage(const std::string& text) {
  return {wire(ReplyCode::usage), text, TaskStatus{}};
}
TaskResult task_refused(const std::string& text) {
  return {wire(ReplyCode::refused), text, TaskStatus{}};
}

TaskStatus task_status(const Task& t) {
  const RankRecord& r = t.record;
  TaskStatus out;
  out.task = t.id;
  out.pod = r.pod;
  out.group = t.group;
  out.bundle = t.group > 0 ? t.bundle : -1;
  out.pid = r.pid;
  out.started = r.started;
  out.done = r.done;
  if (r.done) {
    out.exit_code = r.code;
    out.signal = r.signal;
    out.error = r.note;
    out.has_result = t.result.has_value();
    if (t.result) out.result = *t.result;
    out.result_error = t.result_error;
  }
  return out;
}

void answer_started(State& st, TaskId id, std::int32_t code, const std::string& text,
                    TaskStatus status = {}) {
  auto it = st.task_starts.find(id);
  if (it == st.task_starts.end()) return;
  if (it->second.pending()) it->second.deliver(code, text, std::move(status));
  st.task_starts.erase(it);
}

// An id the book does not hold: never started here, or ended and dropped
// from the bounded history of finished tasks.
Refusal not_held(const State& st, TaskId id) {
  if (st.tasks.fate(id) == TaskFate::dropped)
    return {ReplyCode::failed,
            dropped_record_line("task", id, st.tasks.finished_kept(), "finished tasks")};
  return {ReplyCode::usage, "no task " + std::to_string(id)};
}

// The task ended (by itself, or with its pod): its callers hear of it.
void finish(State& st, TaskId id, std::int32_t code, std::int32_t signal, const std::string& note) {
  const Task* t = st.tasks.finish(id, code, signal, note);
  if (!t) return;
  // Its series leave /metrics (folded into the ended tasks').
  caf::anon_send(st.config.sink, ended_atom::value, static_cast<std::int32_t>(StreamKind::task),
                 std::vector<std::int32_t>{static_cast<std::int32_t>(id)});
  if (auto dropped = st.tasks.take_dropped(); !dropped.empty()) {
    std::vector<std::int32_t> ids;
    for (auto d : dropped) ids.push_back(static_cast<std::int32_t>(d));
    caf::anon_send(st.config.sink, forget_atom::value, static_cast<std::int32_t>(StreamKind::task),
                   std::move(ids));
  }
  answer_started(st, id, wire(ReplyCode::failed),
                 "task " + std::to_string(id) + " ended before it started: " +
                     (note.empty() ? os::ExitStatus{code, signal}.describe() : note));
  const TaskStatus status = task_status(*t);
  for (auto& reply : st.task_waiters.take(id))
    if (reply.pending()) reply.deliver(wire(ReplyCode::ok), std::string(), status);
}

// The pod a task without a bundle goes to: the named one, or the active pod
// running the fewest tasks now (the first on a tie): per-pod counts, no walk.
std::string choose_pod(const State& st, const std::string& pod) {
  if (!pod.empty()) return pod;
  std::vector<std::string> joined;
  for (const auto& candidate : st.active())
    if (st.pods.registry().joined(candidate)) joined.push_back(candidate);
  return st.tasks.least_loaded(joined).value_or(std::string());
}

}  // namespace

TaskResult start_task(Actor* self, std::int64_t group, std::int32_t bundle,
                      const std::string& pod_name, const std::string& command,
                      const std::vector<std::string>& env, const std::string& working_dir) {
  auto& st = self->state;
  if (st.job().mode != JobMode::driver)
    return task_refused("tasks need a driver-mode job: in " +
                        std::string(to_string(st.job().mode)) + " mode the workers run its ranks");
  if (st.state() != JobState::command)
    return task_refused("job is in state " + std::string(to_string(st.state())) +
                        ": tasks start only while the driver runs (command)");
  if (command.find_first_not_of(" \t") == std::string::npos)
    return task_usage("task: no command given");
  for (const auto& e : env)
    if (e.find('=') == std::string::npos || e.front() == '=')
      return task_usage("task env: " + quote(e) + " is not KEY=VALUE");
  std::string pod;
  if (group > 0) {
    const PlacementGroup* g = st.groups.find(group);
    if (!g) return task_usage("no placement group " + std::to_string(group));
    if (g->state != GroupState::created)
      return task_refused("placement group " + std::to_string(group) + " is " +
                          std::string(to_string(g->state)) + ", not CREATED" +
                          (g->why.empty() ? "" : ": " + g->why));
    if (bundle < 0 || static_cast<size_t>(bundle) >= g->nodes.size())
      return task_usage("placement group " + std::to_string(group) + " has no bundle " +
                        std::to_string(bundle) + " (it has " + std::to_string(g->nodes.size()) +
                        ")");
    if (!pod_name.empty() && pod_name != g->nodes[bundle])
      return task_usage("bundle " + std::to_string(bundle) + " is on " + g->nodes[bundle] +
                        ", not " + pod_name);
    pod = g->nodes[bundle];
  } else {
    pod = choose_pod(st, pod_name);
    if (pod.empty()) return task_refused("no worker pod is in the job now");
  }
  const JoinedPod* node = st.pods.registry().find(pod);
  if (!node)
    return (pod_name.empty() || group > 0)
               ? task_refused("pod " + pod + " is not in the job now (lost or deleted)")
               : task_usage("'" + pod + "' is not a pod in the job now");

  Task& t = st.tasks.add(group, bundle, pod, command);
  ProcessLaunch launch;
  launch.stream = StreamId::of_task(t.id);
  launch.command = command;
  EnvMap vars = build_process_env(st.job(), {st.address, st.job().job_id}, pod_site(st, pod));
  for (const auto& [k, v] : env_from_strings(env)) vars[k] = v;  // the task's own win
  vars["ATL_TASK_ID"] = std::to_string(t.id);
  launch.env = to_env_strings(vars);
  launch.working_dir = working_dir.empty() ? st.job().working_dir : working_dir;
  launch.control = true;  // its result comes back on the control channel
  auto reply = self->make_response_promise<std::int32_t, std::string, TaskStatus>();
  st.task_starts.emplace(t.id, reply);
  self->send(node->agent, run_atom::value, std::vector<ProcessLaunch>{std::move(launch)},
             st.config.sink);
  st.log->info("task {} on {}{}: {}", t.id, pod,
               group > 0
                   ? " (group " + std::to_string(group) + " bundle " + std::to_string(bundle) + ")"
                   : std::string(),
               command);
  self->delayed_send(self, kTaskStartTimeout, timeout_atom::value,
                     static_cast<std::int32_t>(kTaskStartTimer), t.id);
  return reply;
}

TaskResult await_task(Actor* self, std::int32_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  const Task* t = st.tasks.find(id);
  if (!t) {
    Refusal why = not_held(st, id);
    return {wire(why.code), why.text, TaskStatus{}};
  }
  if (timeout_ms < 0) return task_usage("timeout must not be negative");
  if (t->record.done || timeout_ms == 0)
    return {wire(ReplyCode::ok), std::string(), task_status(*t)};
  auto promise = self->make_response_promise<std::int32_t, std::string, TaskStatus>();
  WaiterId waiter = st.task_waiters.add(id, promise);
  self->delayed_send(self, std::chrono::milliseconds(timeout_ms), expire_atom::value,
                     static_cast<std::int32_t>(kTaskWaitTimer), waiter);
  return promise;
}

Result kill_task(Actor* self, std::int32_t id) {
  auto& st = self->state;
  const Task* t = st.tasks.find(id);
  if (!t) {
    Refusal why = not_held(st, id);
    return {wire(why.code), why.text};
  }
  if (t->record.done) return refused("task " + std::to_string(id) + " has ended already");
  const JoinedPod* node = st.pods.registry().find(t->record.pod);
  if (node != nullptr)
    self->send(node->agent, stop_atom::value, StreamId::of_task(id),
               static_cast<std::int64_t>(st.job().grace.count()));
  return {wire(ReplyCode::ok), std::string()};
}

void kill_tasks(Actor* self, std::int64_t group, const std::string& why) {
  auto& st = self->state;
  for (TaskId id : st.tasks.live_in_group(group)) {
    st.log->info("task {} stopped: {}", id, why);
    kill_task(self, id);
  }
}

void on_pod_lost_tasks(Actor* self, const std::string& pod) {
  for (TaskId id : self->state.tasks.live_on(pod))
    finish(self->state, id, 255, 0, "pod " + pod + " was lost");
}

void on_task_started(Actor* self, const ProcessStarted& started, std::int32_t id) {
  auto& st = self->state;
  if (!st.tasks.mark_started(id, started.pid)) return;
  answer_started(st, id, wire(ReplyCode::ok), std::string(), task_status(*st.tasks.find(id)));
}

void on_task_exit(Actor* self, const ProcessExit& exit, std::int32_t id) {
  auto& st = self->state;
  if (st.tasks.fate(id) != TaskFate::live) return;
  st.log->info("task {} ended: {}", id,
               exit.error.empty() ? os::ExitStatus{exit.code, exit.signal}.describe() : exit.error);
  finish(st, id, exit.code, exit.signal, exit.error);
}

void on_task_note(Actor* self, const ProcessNote& note, std::int32_t id) {
  auto& st = self->state;
  Task* t = st.tasks.live(id);
  if (!t) return;
  if (note.line.rfind(kResultVerb, 0) != 0) {
    st.log->warn("task {}: unknown control line ignored", id);
    return;
  }
  if (note.line.size() - kResultVerb.size() > kMaxResultBytes) {
    t->result_error = "its result of " + std::to_string(note.line.size() - kResultVerb.size()) +
                      " bytes is over the limit of " + std::to_string(kMaxResultBytes) +
                      " (pass big data through shared storage)";
    t->result.reset();
    st.log->warn("task {}: {}", id, t->result_error);
    return;
  }
  t->result = note.line.substr(kResultVerb.size());
}

void on_task_wait_timer(Actor* self, WaiterId waiter) {
  auto& st = self->state;
  auto expired = st.task_waiters.expire(waiter);
  if (!expired) return;  // answered meanwhile
  auto& [id, reply] = *expired;
  const Task* t = st.tasks.find(id);
  if (!reply.pending()) return;
  if (t) {
    reply.deliver(wire(ReplyCode::ok), std::string(), task_status(*t));
  } else {  // ended and dropped from the history while this poll waited
    Refusal why = not_held(st, id);
    reply.deliver(wire(why.code), why.text, TaskStatus{});
  }
}

void on_task_start_timer(Actor* self, TaskId id) {
  auto& st = self->state;
  const Task* t = st.tasks.find(id);
  if (!t || t->record.started || t->record.done) return;
  answer_started(
      st, id, wire(ReplyCode::failed),
      "task " + std::to_string(id) + " did not start within " + format_duration(kTaskStartTimeout));
}

}  // namespace atl::supervisor
