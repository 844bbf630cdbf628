// The Supervisor's driver half: placement groups and tasks (driver mode).
// The decisions are PlacementBook's and TaskCourse's; this half gives them
// the joined pods as placement sees them and the time, chooses a task's pod,
// and turns their effects into the outbox's.
#include <string_view>
#include <unordered_set>

#include "atl/core/env.hpp"
#include "atl/core/quote.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {

namespace {

Refusal usage(std::string text) { return {ReplyCode::usage, std::move(text)}; }
Refusal refused(std::string text) { return {ReplyCode::refused, std::move(text)}; }

// How often a start again looks whether its group is placed again.
constexpr Millis kGroupRetry = std::chrono::seconds(1);
}  // namespace

// --- placement ---------------------------------------------------------------------

// Only driver mode gives the workers' resources out: spmd's ranks and ray
// mode's Ray nodes hold them already.
std::string Supervisor::placement_refusal() const {
  if (job().mode != JobMode::driver)
    return "placement groups need a driver-mode job: in " + std::string(to_string(job().mode)) +
           " mode the workers' resources belong to its " +
           (job().mode == JobMode::ray ? "Ray nodes (use Ray's own placement groups)" : "ranks");
  if (is_terminal(state()) || controller_.ending())
    return "job is in state " + std::string(to_string(state())) +
           ": it has ended, placement is refused";
  return "";
}

std::vector<PlacementNode> Supervisor::placement_nodes() const {
  std::vector<PlacementNode> nodes;
  nodes.reserve(pods_.registry().joined_count());
  // A set, not a search of active() per pod: O(pods^2) string compares at
  // thousands of pods, on every placement group created.
  const auto& active = controller_.active();
  const std::unordered_set<std::string_view> actives(active.begin(), active.end());
  const auto& taints = controller_.taints().all();
  for (const auto& [pod, joined] : pods_.registry().joined_pods()) {
    const NodeInfo& i = joined.info;
    PlacementNode n;
    n.name = pod;
    n.total = node_resources(i.cpus, i.gpus, i.memory, i.shm, i.resources);
    auto taint = taints.find(i.machine);
    if (taint != taints.end()) {
      n.unavailable = "node " + i.machine + " is tainted (" + taint->second.reason + ")";
    } else if (!active.empty() && actives.count(pod) == 0) {
      n.unavailable = "a spare (it takes work when an active pod is lost)";
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

PlacementNodes Supervisor::nodes() const {
  // What placement_nodes() reads: the joined pods, the taints, the active pods.
  const std::uint64_t version =
      pods_.registry().changes() + controller_.taints().changes() + controller_.active_changes();
  return {version, [this] { return placement_nodes(); }};
}

void Supervisor::perform(PlacementEffects effects) {
  for (auto& e : effects) {
    if (auto* a = std::get_if<placement::Answer>(&e)) {
      out_.put(std::move(*a));
    } else if (auto* t = std::get_if<placement::ArmWaitTimer>(&e)) {
      out_.put(effect::ArmWait{kGroupWaitTimer, t->waiter, t->after});
    } else if (auto* line = std::get_if<placement::Say>(&e)) {
      out_.put(std::move(*line));
    } else if (auto* stop = std::get_if<placement::StopTasks>(&e)) {
      kill_tasks(stop->group, stop->why);
    }
  }
}

void Supervisor::refresh_placement() {
  PlacementEffects out;
  groups_.refresh(nodes(), clock_.unix_ms(), out);
  perform(std::move(out));
}

void Supervisor::clear_groups(const std::string& why) {
  PlacementEffects out;
  groups_.clear(why, out);
  perform(std::move(out));
}

Answer Supervisor::create_group(const GroupRequest& r, OwnerId owner) {
  if (auto why = placement_refusal(); !why.empty()) return {0, ReplyCode::refused, why};
  PlacementEffects out;
  std::int64_t made = 0;
  auto a = groups_.create(r.name, r.strategy, r.bundles, r.timeout_ms, nodes(), clock_.unix_ms(),
                          out, &made);
  if (made > 0 && owner.value > 0) owners_.own_group(owner, made);
  perform(std::move(out));
  return a;
}

std::optional<Answer> Supervisor::group_now(std::int64_t id) const {
  return groups_.answer_now(id);
}

std::optional<Answer> Supervisor::on(const GroupWait& request, const Keep& keep) {
  if (auto now = group_now(request.id)) return now;
  await_group(request.id, keep(), Millis{request.timeout_ms});
  return std::nullopt;
}

void Supervisor::await_group(std::int64_t id, ReplyId reply, Millis timeout) {
  PlacementEffects out;
  groups_.await(id, reply, timeout, out);
  perform(std::move(out));
}

Answer Supervisor::on(const GroupRemove& request) {
  const std::int64_t id = request.id;
  owners_.forget_group(id);
  PlacementEffects out;
  auto a = groups_.remove(id, nodes(), clock_.unix_ms(), out);
  perform(std::move(out));
  return a;
}

std::string Supervisor::cluster_json() const {
  return groups_.cluster_json(placement_nodes(), [this](const std::string& pod) {
    const auto& info = pods_.registry().at(pod).info;
    return std::make_pair(info.machine, info.address);
  });
}

// --- tasks -------------------------------------------------------------------------

void Supervisor::perform(TaskEffects effects) {
  for (auto& e : effects) {
    if (auto* a = std::get_if<task::Answer>(&e)) {
      out_.put(std::move(*a));
    } else if (auto* t = std::get_if<task::ArmStartTimer>(&e)) {
      out_.put(effect::Arm{kTaskStartTimer, t->task, t->after, false});
    } else if (auto* w = std::get_if<task::ArmWaitTimer>(&e)) {
      out_.put(effect::ArmWait{kTaskWaitTimer, w->waiter, w->after});
    } else if (auto* ended = std::get_if<task::Ended>(&e)) {
      for (TaskId id : ended->tasks) task_gone(id);
      out_.put(effect::StreamsEnded{StreamKind::task, std::move(ended->tasks)});
    } else if (auto* f = std::get_if<task::Forget>(&e)) {
      out_.put(effect::ForgetStreams{StreamKind::task, std::move(f->tasks)});
    } else if (auto* line = std::get_if<task::Say>(&e)) {
      out_.put(std::move(*line));
    }
  }
}

// The pod a task without a bundle goes to: the active pod running the
// fewest tasks now (the first on a tie): per-pod counts, no walk.
std::string Supervisor::least_loaded_pod() const {
  std::vector<std::string> joined;
  for (const auto& candidate : controller_.active())
    if (pods_.registry().joined(candidate)) joined.push_back(candidate);
  return tasks_.book().least_loaded(joined).value_or(std::string());
}

std::optional<Refusal> Supervisor::start_task(const TaskRequest& r, const Keep& keep,
                                              OwnerId owner) {
  if (r.restarts < -1)
    return usage("task restarts: " + std::to_string(r.restarts) +
                 ": give a count >= 0, or -1 (without end)");
  if (r.restarts != 0 && !r.detached)
    return usage(
        "task restarts: only a detached task is started again by the head (it "
        "outlives its driver); start it detached");
  if (r.own_group && (!r.detached || r.group <= 0))
    return usage("task own_group: only a detached task in a placement group has one");
  auto placed = place_task(r, keep, owner);
  if (auto* refusal = std::get_if<Refusal>(&placed)) return std::move(*refusal);
  if (r.restarts != 0 || r.own_group) restarts_.keep(std::get<TaskId>(placed), r, clock_.now());
  return std::nullopt;
}

std::variant<Refusal, TaskId> Supervisor::place_task(const TaskRequest& r, const Keep& keep,
                                                     OwnerId owner) {
  if (job().mode != JobMode::driver)
    return refused("tasks need a driver-mode job: in " + std::string(to_string(job().mode)) +
                   " mode the workers run its ranks");
  if (state() != JobState::command)
    return refused("job is in state " + std::string(to_string(state())) +
                   ": tasks start only while the driver runs (command)");
  if (r.command.find_first_not_of(" \t") == std::string::npos)
    return usage("task: no command given");
  for (const auto& e : r.env)
    if (e.find('=') == std::string::npos || e.front() == '=')
      return usage("task env: " + quote(e) + " is not KEY=VALUE");
  std::string pod;
  if (r.group > 0) {
    const PlacementGroup* g = groups_.groups().find(r.group);
    const std::string group = std::to_string(r.group);
    if (!g) return usage("no placement group " + group);
    if (g->state != GroupState::created)
      return refused("placement group " + group + " is " + std::string(to_string(g->state)) +
                     ", not CREATED" + (g->why.empty() ? "" : ": " + g->why));
    if (r.bundle < 0 || static_cast<size_t>(r.bundle) >= g->nodes.size())
      return usage("placement group " + group + " has no bundle " + std::to_string(r.bundle) +
                   " (it has " + std::to_string(g->nodes.size()) + ")");
    if (!r.pod.empty() && r.pod != g->nodes[r.bundle])
      return usage("bundle " + std::to_string(r.bundle) + " is on " + g->nodes[r.bundle] +
                   ", not " + r.pod);
    pod = g->nodes[r.bundle];
  } else {
    pod = r.pod.empty() ? least_loaded_pod() : r.pod;
    if (pod.empty()) return refused("no worker pod is in the job now");
  }
  const auto agent = agent_of(pod);
  if (!agent)
    return (r.pod.empty() || r.group > 0)
               ? refused("pod " + pod + " is not in the job now (lost or deleted)")
               : usage("'" + pod + "' is not a pod in the job now");

  TaskEffects out;
  const Task& t = tasks_.start(r.group, r.bundle, pod, r.command, keep(), out);
  const TaskId id = t.id;
  if (owner.value > 0 && !r.detached) owners_.own_task(owner, id);
  ProcessLaunch launch;
  launch.stream = StreamId::of_task(t.id);
  launch.command = r.command;
  EnvMap vars = build_process_env(job(), {address_, job().job_id}, pod_site(pod));
  for (const auto& [k, v] : env_from_strings(r.env)) vars[k] = v;  // the task's own win
  vars["ATL_TASK_ID"] = std::to_string(t.id);
  launch.env = to_env_strings(vars);
  launch.working_dir = r.working_dir.empty() ? job().working_dir : r.working_dir;
  launch.control = true;  // its result comes back on the control channel
  out_.put(effect::RunOn{*agent, {{std::move(launch)}}});
  out_.put(Say{false, "task " + std::to_string(t.id) + " on " + pod +
                          (r.group > 0 ? " (group " + std::to_string(r.group) + " bundle " +
                                             std::to_string(r.bundle) + ")"
                                       : std::string()) +
                          ": " + r.command});
  perform(std::move(out));
  return id;
}

void Supervisor::task_gone(TaskId id) {
  const auto due = restarts_.ended(id, clock_.now());
  if (!due) return;
  if (!due->again) {
    if (!due->killed && due->limit != 0)
      out_.put(Say{true, "task " + std::to_string(due->chain) + " ended (as task " +
                             std::to_string(id) + ") and is not started again: its " +
                             std::to_string(due->used) + " restarts are used"});
    release_group(due->release);
    return;
  }
  // Armed even when due now: a pod's loss ends its tasks before its
  // bundles are placed again, and the start again goes where they are.
  out_.put(effect::Arm{kTaskRestartTimer, due->chain, due->after, false});
}

// A detached task's own reservation once it ended for good (0: none, or
// removed already).
void Supervisor::release_group(std::int64_t group) {
  if (group <= 0) return;
  const PlacementGroup* g = groups_.groups().find(group);
  if (!g || g->state == GroupState::removed) return;
  on(GroupRemove{group});
}

void Supervisor::restart_task(TaskId chain) {
  auto request = restarts_.next(chain);
  if (!request) return;  // killed while it waited
  const std::int32_t number = restarts_.used(chain);
  const std::string of =
      request->restarts < 0 ? std::string() : " of " + std::to_string(request->restarts);
  if (request->group > 0) {
    // Its group is being placed again (its pod was lost): it starts once
    // the group is, as Ray's actor waits for its rescheduled bundle.
    const PlacementGroup* g = groups_.groups().find(request->group);
    if (g && (g->state == GroupState::pending || g->state == GroupState::rescheduling)) {
      if (restarts_.later(chain))
        out_.put(Say{false, "task " + std::to_string(chain) + " waits for placement group " +
                                std::to_string(request->group) + " (" +
                                std::string(to_string(g->state)) + ") to start again"});
      out_.put(effect::Arm{kTaskRestartTimer, chain, kGroupRetry, false});
      return;
    }
  }
  auto placed = place_task(
      *request, [] { return ReplyId{0}; }, OwnerId{});
  if (auto* refusal = std::get_if<Refusal>(&placed)) {
    const std::int64_t release = restarts_.failed(chain);
    out_.put(Say{true, "task " + std::to_string(chain) + " was not started again (restart " +
                           std::to_string(number) + of + "): " + refusal->text});
    release_group(release);
    return;
  }
  const TaskId id = std::get<TaskId>(placed);
  restarts_.started(chain, id, clock_.now());
  out_.put(Say{false, "task " + std::to_string(chain) + " started again as task " +
                          std::to_string(id) + " (restart " + std::to_string(number) + of + ")"});
}

std::optional<task::Answer> Supervisor::task_now(TaskId id, std::int64_t timeout_ms) const {
  return tasks_.answer_now(id, timeout_ms);
}

std::optional<task::Answer> Supervisor::on(const TaskWait& request, const Keep& keep) {
  if (auto now = task_now(request.task, request.timeout_ms)) return now;
  await_task(request.task, keep(), Millis(request.timeout_ms));
  return std::nullopt;
}

void Supervisor::await_task(TaskId id, ReplyId reply, Millis timeout) {
  TaskEffects out;
  tasks_.await(id, reply, timeout, out);
  perform(std::move(out));
}

std::optional<Refusal> Supervisor::on(const TaskKill& request) {
  // A task started again answers to its chain's first id too (its maker's).
  const TaskId id = restarts_.current(request.task);
  if (auto release = restarts_.killed(request.task); release && id == 0) {
    release_group(*release);  // it was waiting to start: that is its end
    return std::nullopt;
  }
  const Task* t = tasks_.book().find(id);
  if (!t) return tasks_.not_held(id);
  if (t->record.done) return refused("task " + std::to_string(id) + " has ended already");
  if (auto agent = agent_of(t->record.pod))
    out_.put(effect::StopStream{*agent, {StreamId::of_task(id), job().grace.count()}});
  return std::nullopt;
}

std::optional<Refusal> Supervisor::disown(bool group, std::int64_t id, OwnerId owner) {
  const std::string what = (group ? "placement group " : "task ") + std::to_string(id);
  const OwnerId* made_by =
      group ? owners_.owner_of_group(id) : owners_.owner_of_task(static_cast<TaskId>(id));
  if (!made_by) return usage(what + " has no owner to outlive (ended, detached, or unknown)");
  if (!(*made_by == owner)) return refused(what + " was made by another driver");
  if (group) {
    owners_.disown_group(id);
  } else {
    owners_.disown_task(static_cast<TaskId>(id));
  }
  return std::nullopt;
}

void Supervisor::owner_gone(OwnerId owner) {
  // What still lives of it: the job's own end (the driver's, a new
  // attempt) may have cleared its groups and ended its tasks already.
  std::vector<TaskId> tasks;
  std::vector<std::int64_t> groups;
  auto left = owners_.gone(owner);
  for (TaskId id : left.tasks)
    if (const Task* t = tasks_.book().find(id); t && !t->record.done) tasks.push_back(id);
  for (std::int64_t id : left.groups)
    if (const PlacementGroup* g = groups_.groups().find(id);
        g && g->state != GroupState::removed && g->state != GroupState::failed)
      groups.push_back(id);
  if (groups.empty() && tasks.empty()) return;
  out_.put(Say{false, "a driver's connection ended: removing its " + std::to_string(groups.size()) +
                          " placement groups and stopping " + std::to_string(tasks.size()) +
                          " tasks (not detached)"});
  for (TaskId id : tasks) on(TaskKill{id});
  for (std::int64_t id : groups) on(GroupRemove{id});
}

void Supervisor::kill_tasks(std::int64_t group, const std::string& why) {
  for (TaskId id : tasks_.book().live_in_group(group)) {
    out_.put(Say{false, "task " + std::to_string(id) + " stopped: " + why});
    on(TaskKill{id});
  }
}

void Supervisor::task_note(TaskId id, const std::string& line) {
  TaskEffects out;
  tasks_.on_note(id, line, out);
  perform(std::move(out));
}

void Supervisor::abandon_tasks(const std::string& why) {
  TaskEffects out;
  tasks_.abandon(why, out);
  perform(std::move(out));
}

bool Supervisor::wait_expired(std::int32_t kind, WaiterId waiter) {
  if (kind == kGroupWaitTimer) {
    PlacementEffects out;
    groups_.on_wait_timer(waiter, out);
    perform(std::move(out));
  } else if (kind == kTaskWaitTimer) {
    TaskEffects out;
    tasks_.on_wait_timer(waiter, out);
    perform(std::move(out));
  } else if (kind == kStateWatchTimer) {
    FeedEffects out;
    feed_.on_wait_timer(waiter, out);
    perform(std::move(out));
  } else if (kind == kRunWaitTimer) {
    DebugEffects out;
    course_.on_run_wait_timer(waiter, debug_view(), out);
    perform(std::move(out));
  } else {
    return false;
  }
  return true;
}

}  // namespace atl::supervisor
