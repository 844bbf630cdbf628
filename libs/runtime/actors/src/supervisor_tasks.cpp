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

TaskResult task_usage(const std::string& text) {
  return {wire(ReplyCode::usage), text, TaskStatus{}};
}
TaskResult task_refused(const std::string& text) {
  return {wire(ReplyCode::refused), text, TaskStatus{}};
}
Result refused(const std::string& text) { return {wire(ReplyCode::refused), text}; }

// The pod a task without a bundle goes to: the named one, or the active pod
// running the fewest tasks now (the first on a tie): per-pod counts, no walk.
std::string choose_pod(const State& st, const std::string& pod) {
  if (!pod.empty()) return pod;
  std::vector<std::string> joined;
  for (const auto& candidate : st.active())
    if (st.pods().registry().joined(candidate)) joined.push_back(candidate);
  return st.tasks.book().least_loaded(joined).value_or(std::string());
}

}  // namespace

void perform(Actor* self, const TaskEffects& effects) {
  auto& st = self->state;
  for (const auto& effect : effects) {
    if (const auto* a = std::get_if<task::Answer>(&effect)) {
      deliver(st.task_replies, *a);
    } else if (const auto* t = std::get_if<task::ArmStartTimer>(&effect)) {
      self->delayed_send(self, t->after, timeout_atom::value,
                         static_cast<std::int32_t>(kTaskStartTimer), t->task);
    } else if (const auto* w = std::get_if<task::ArmWaitTimer>(&effect)) {
      self->delayed_send(self, w->after, expire_atom::value,
                         static_cast<std::int32_t>(kTaskWaitTimer), w->waiter);
    } else if (const auto* e = std::get_if<task::Ended>(&effect)) {
      self->send(st.config.sink, ended_atom::value, static_cast<std::int32_t>(StreamKind::task),
                 e->tasks);
    } else if (const auto* f = std::get_if<task::Forget>(&effect)) {
      self->send(st.config.sink, forget_atom::value, static_cast<std::int32_t>(StreamKind::task),
                 f->tasks);
    } else if (const auto* line = std::get_if<task::Say>(&effect)) {
      say(st, *line);
    }
  }
}

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
    const PlacementGroup* g = st.groups.groups().find(group);
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
  const caf::actor* node = st.agent_of(pod);
  if (!node)
    return (pod_name.empty() || group > 0)
               ? task_refused("pod " + pod + " is not in the job now (lost or deleted)")
               : task_usage("'" + pod + "' is not a pod in the job now");

  auto reply = self->make_response_promise<std::int32_t, std::string, TaskStatus>();
  TaskEffects out;
  const Task& t = st.tasks.start(group, bundle, pod, command, st.task_replies.keep(reply), out);
  ProcessLaunch launch;
  launch.stream = StreamId::of_task(t.id);
  launch.command = command;
  EnvMap vars =
      build_process_env(st.job(), {st.sup->address(), st.job().job_id}, st.sup->pod_site(pod));
  for (const auto& [k, v] : env_from_strings(env)) vars[k] = v;  // the task's own win
  vars["ATL_TASK_ID"] = std::to_string(t.id);
  launch.env = to_env_strings(vars);
  launch.working_dir = working_dir.empty() ? st.job().working_dir : working_dir;
  launch.control = true;  // its result comes back on the control channel
  self->send(*node, run_atom::value, std::vector<ProcessLaunch>{std::move(launch)}, st.config.sink);
  st.log->info("task {} on {}{}: {}", t.id, pod,
               group > 0
                   ? " (group " + std::to_string(group) + " bundle " + std::to_string(bundle) + ")"
                   : std::string(),
               command);
  perform(self, out);
  return reply;
}

TaskResult await_task(Actor* self, std::int32_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  if (auto now = st.tasks.answer_now(id, timeout_ms))
    return {wire(now->code), now->text, std::move(now->status)};
  // (A promise takes the request over: made only when the answer waits.)
  auto promise = self->make_response_promise<std::int32_t, std::string, TaskStatus>();
  TaskEffects out;
  st.tasks.await(id, st.task_replies.keep(promise), std::chrono::milliseconds(timeout_ms), out);
  perform(self, out);
  return promise;
}

Result kill_task(Actor* self, std::int32_t id) {
  auto& st = self->state;
  const Task* t = st.tasks.book().find(id);
  if (!t) {
    Refusal why = st.tasks.not_held(id);
    return {wire(why.code), why.text};
  }
  if (t->record.done) return refused("task " + std::to_string(id) + " has ended already");
  if (const caf::actor* node = st.agent_of(t->record.pod))
    self->send(*node, stop_atom::value, StreamId::of_task(id),
               static_cast<std::int64_t>(st.job().grace.count()));
  return {wire(ReplyCode::ok), std::string()};
}

void kill_tasks(Actor* self, std::int64_t group, const std::string& why) {
  auto& st = self->state;
  for (TaskId id : st.tasks.book().live_in_group(group)) {
    st.log->info("task {} stopped: {}", id, why);
    kill_task(self, id);
  }
}

void on_pod_lost_tasks(Actor* self, const std::string& pod) {
  TaskEffects out;
  self->state.tasks.on_pod_lost(pod, out);
  perform(self, out);
}

void on_task_started(Actor* self, const ProcessStarted& started, std::int32_t id) {
  TaskEffects out;
  self->state.tasks.on_started(id, started.pid, out);
  perform(self, out);
}

void on_task_exit(Actor* self, const ProcessExit& exit, std::int32_t id) {
  TaskEffects out;
  self->state.tasks.on_exit(id, exit.code, exit.signal, exit.error, out);
  perform(self, out);
}

void on_task_note(Actor* self, const ProcessNote& note, std::int32_t id) {
  TaskEffects out;
  self->state.tasks.on_note(id, note.line, out);
  perform(self, out);
}

void on_task_wait_timer(Actor* self, WaiterId waiter) {
  TaskEffects out;
  self->state.tasks.on_wait_timer(waiter, out);
  perform(self, out);
}

void abandon_tasks(Actor* self, const std::string& why) {
  TaskEffects out;
  self->state.tasks.abandon(why, out);
  perform(self, out);
}

void on_task_start_timer(Actor* self, TaskId id) {
  TaskEffects out;
  self->state.tasks.on_start_timer(id, out);
  perform(self, out);
}

}  // namespace atl::supervisor
