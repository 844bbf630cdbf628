// The driver's tasks on the JobSupervisor: a command on a worker pod (in a
// placement group's bundle, or on a pod), with its own stream of output, its
// exit status, and a life no longer than its bundle's or its driver's.
// Each task is its own run on the pod's NodeAgent (run id = its stream).
#include <nlohmann/json.hpp>

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

Result usage(const std::string& text) { return {std::int32_t{2}, text}; }
Result refused(const std::string& text) { return {std::int32_t{3}, text}; }

std::string task_json(const State::Task& t) {
  const RankRecord& r = t.record;
  nlohmann::json j{{"task", t.id}, {"pod", r.pod},         {"stream", task_stream(t.id)},
                   {"pid", r.pid}, {"started", r.started}, {"done", r.done}};
  if (t.group > 0) {
    j["group"] = t.group;
    j["bundle"] = t.bundle;
  }
  if (r.done) {
    j["exit_code"] = r.code;
    j["signal"] = r.signal;
    if (!r.note.empty()) j["error"] = r.note;
    if (t.result) j["result"] = *t.result;
    if (!t.result_error.empty()) j["result_error"] = t.result_error;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void answer_started(State::Task& t, std::int32_t code, const std::string& text) {
  if (t.start_answered) return;
  t.start_answered = true;
  if (t.started_reply.pending()) t.started_reply.deliver(code, text);
}

void answer_done(State& st, State::Task& t) {
  std::string text = task_json(t);
  for (auto it = st.task_waiters.begin(); it != st.task_waiters.end();) {
    if (it->second.task != t.id) {
      ++it;
      continue;
    }
    if (it->second.reply.pending()) it->second.reply.deliver(std::int32_t{0}, text);
    it = st.task_waiters.erase(it);
  }
}

// The task ended (by itself, or with its pod): its callers hear of it.
void finish(State& st, State::Task& t, std::int32_t code, std::int32_t signal,
            const std::string& note) {
  if (t.record.done) return;
  t.record.done = true;
  t.record.code = code;
  t.record.signal = signal;
  t.record.note = note;
  answer_started(t, std::int32_t{1},
                 "task " + std::to_string(t.id) + " ended before it started: " +
                     (note.empty() ? os::ExitStatus{code, signal}.describe() : note));
  answer_done(st, t);
}

// The pod a task without a bundle goes to: the named one, or the active pod
// running the fewest tasks now (the lowest on a tie).
std::string choose_pod(const State& st, const std::string& pod) {
  if (!pod.empty()) return pod;
  std::string best;
  size_t best_load = 0;
  for (const auto& candidate : st.active) {
    if (!st.nodes.count(candidate)) continue;
    size_t load = 0;
    for (const auto& [id, t] : st.tasks) load += t.record.pod == candidate && !t.record.done;
    if (best.empty() || load < best_load) {
      best = candidate;
      best_load = load;
    }
  }
  return best;
}

}  // namespace

Result start_task(Actor* self, std::int64_t group, std::int32_t bundle, const std::string& pod_name,
                  const std::string& command, const std::vector<std::string>& env,
                  const std::string& working_dir) {
  auto& st = self->state;
  if (st.job().mode != JobMode::driver)
    return refused("tasks need a driver-mode job: in " + std::string(to_string(st.job().mode)) +
                   " mode the workers run its ranks");
  if (st.state() != JobState::command)
    return refused("job is in state " + std::string(to_string(st.state())) +
                   ": tasks start only while the driver runs (command)");
  if (command.find_first_not_of(" \t") == std::string::npos) return usage("task: no command given");
  for (const auto& e : env)
    if (e.find('=') == std::string::npos || e.front() == '=')
      return usage("task env: " + quote(e) + " is not KEY=VALUE");
  std::string pod;
  if (group > 0) {
    const PlacementGroup* g = st.groups.find(group);
    if (!g) return usage("no placement group " + std::to_string(group));
    if (g->state != GroupState::created)
      return refused("placement group " + std::to_string(group) + " is " +
                     std::string(to_string(g->state)) + ", not CREATED" +
                     (g->why.empty() ? "" : ": " + g->why));
    if (bundle < 0 || static_cast<size_t>(bundle) >= g->nodes.size())
      return usage("placement group " + std::to_string(group) + " has no bundle " +
                   std::to_string(bundle) + " (it has " + std::to_string(g->nodes.size()) + ")");
    if (!pod_name.empty() && pod_name != g->nodes[bundle])
      return usage("bundle " + std::to_string(bundle) + " is on " + g->nodes[bundle] + ", not " +
                   pod_name);
    pod = g->nodes[bundle];
  } else {
    pod = choose_pod(st, pod_name);
    if (pod.empty()) return refused("no worker pod is in the job now");
  }
  auto node = st.nodes.find(pod);
  if (node == st.nodes.end())
    return (pod_name.empty() || group > 0)
               ? refused("pod " + pod + " is not in the job now (lost or deleted)")
               : usage("'" + pod + "' is not a pod in the job now");

  State::Task t;
  t.id = st.next_task++;
  t.group = group;
  t.bundle = group > 0 ? bundle : -1;
  t.command = command;
  t.record.pod = pod;
  RankLaunch launch;
  launch.stream = task_stream(t.id);
  launch.attempt = launch.stream;  // the agent's run id for this task
  launch.command = command;
  EnvMap vars = build_process_env(st.job(), {st.address, st.job().job_id}, pod_site(st, pod));
  for (const auto& [k, v] : env_from_strings(env)) vars[k] = v;  // the task's own win
  vars["ATL_TASK_ID"] = std::to_string(t.id);
  launch.env = to_env_strings(vars);
  launch.working_dir = working_dir.empty() ? st.job().working_dir : working_dir;
  launch.control = true;  // its result comes back on the control channel
  t.started_reply = self->make_response_promise<std::int32_t, std::string>();
  auto reply = t.started_reply;
  self->send(node->second.agent, run_atom::value, launch.stream,
             std::vector<RankLaunch>{std::move(launch)}, st.config.sink);
  st.log->info("task {} on {}{}: {}", t.id, pod,
               group > 0
                   ? " (group " + std::to_string(group) + " bundle " + std::to_string(bundle) + ")"
                   : std::string(),
               command);
  self->delayed_send(self, kTaskStartTimeout, timeout_atom::value,
                     static_cast<std::int32_t>(kTaskStartTimer), t.id);
  st.tasks.emplace(t.id, std::move(t));
  return reply;
}

Result await_task(Actor* self, std::int32_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  auto it = st.tasks.find(id);
  if (it == st.tasks.end()) return usage("no task " + std::to_string(id));
  if (timeout_ms < 0) return usage("timeout must not be negative");
  if (it->second.record.done || timeout_ms == 0) return {std::int32_t{0}, task_json(it->second)};
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  std::int32_t serial = st.next_task_waiter++;
  st.task_waiters[serial] = {id, promise};
  self->delayed_send(self, std::chrono::milliseconds(timeout_ms), timeout_atom::value,
                     static_cast<std::int32_t>(kTaskWaitTimer), serial);
  return promise;
}

Result kill_task(Actor* self, std::int32_t id) {
  auto& st = self->state;
  auto it = st.tasks.find(id);
  if (it == st.tasks.end()) return usage("no task " + std::to_string(id));
  if (it->second.record.done) return refused("task " + std::to_string(id) + " has ended already");
  auto node = st.nodes.find(it->second.record.pod);
  if (node != st.nodes.end())
    self->send(node->second.agent, stop_atom::value, task_stream(id),
               static_cast<std::int64_t>(st.job().grace.count()));
  return {std::int32_t{0}, std::string()};
}

void kill_tasks(Actor* self, std::int64_t group, const std::string& why) {
  auto& st = self->state;
  for (auto& [id, t] : st.tasks) {
    if (t.record.done || (group > 0 && t.group != group)) continue;
    st.log->info("task {} stopped: {}", id, why);
    kill_task(self, id);
  }
}

void on_pod_lost_tasks(Actor* self, const std::string& pod) {
  for (auto& [id, t] : self->state.tasks)
    if (t.record.pod == pod) finish(self->state, t, 255, 0, "pod " + pod + " was lost");
}

void on_task_started(Actor* self, const RankStarted& started, std::int32_t id) {
  auto it = self->state.tasks.find(id);
  if (it == self->state.tasks.end() || it->second.record.done) return;
  State::Task& t = it->second;
  t.record.started = true;
  t.record.pid = started.pid;
  answer_started(t, std::int32_t{0}, task_json(t));
}

void on_task_exit(Actor* self, const RankExit& exit, std::int32_t id) {
  auto it = self->state.tasks.find(id);
  if (it == self->state.tasks.end()) return;
  self->state.log->info(
      "task {} ended: {}", id,
      exit.error.empty() ? os::ExitStatus{exit.code, exit.signal}.describe() : exit.error);
  finish(self->state, it->second, exit.code, exit.signal, exit.error);
}

void on_task_note(Actor* self, const RankNote& note, std::int32_t id) {
  auto& st = self->state;
  auto it = st.tasks.find(id);
  if (it == st.tasks.end() || it->second.record.done) return;
  if (note.line.rfind(kResultVerb, 0) != 0) {
    st.log->warn("task {}: unknown control line ignored", id);
    return;
  }
  if (note.line.size() - kResultVerb.size() > kMaxResultBytes) {
    it->second.result_error = "its result of " +
                              std::to_string(note.line.size() - kResultVerb.size()) +
                              " bytes is over the limit of " + std::to_string(kMaxResultBytes) +
                              " (pass big data through shared storage)";
    it->second.result.reset();
    st.log->warn("task {}: {}", id, it->second.result_error);
    return;
  }
  it->second.result = note.line.substr(kResultVerb.size());
}

void on_task_timer(Actor* self, std::int32_t kind, std::int32_t arg) {
  auto& st = self->state;
  if (kind == kTaskWaitTimer) {  // this wait's time is up: "not done" yet
    auto w = st.task_waiters.find(arg);
    if (w == st.task_waiters.end()) return;
    auto t = st.tasks.find(w->second.task);
    if (w->second.reply.pending())
      w->second.reply.deliver(std::int32_t{0}, t == st.tasks.end() ? "{}" : task_json(t->second));
    st.task_waiters.erase(w);
    return;
  }
  auto it = st.tasks.find(arg);
  if (it == st.tasks.end()) return;
  State::Task& t = it->second;
  if (!t.record.started && !t.record.done)
    answer_started(t, std::int32_t{1},
                   "task " + std::to_string(arg) + " did not start within " +
                       format_duration(kTaskStartTimeout));
}

}  // namespace atl::supervisor
