// Faults and restarts on the JobSupervisor: a fault's course (restart within
// the budget, or the job's end), a pod lost, silent or deleted, the liveness
// timer, atlctl taint and delete. The decisions are RestartPolicy's, the
// pods' PodRegistry's and Liveness's; this file performs them.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "atl/core/quote.hpp"
#include "atl/core/split.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// A restart whose pre-flight failed tries again after this pause.
constexpr auto kRetryPause = std::chrono::seconds(1);

}  // namespace

// Pre-flight and relaunch once the faulted attempt's ranks are all gone and
// every pod is back.
void maybe_relaunch(Actor* self) {
  auto& st = self->state;
  if (st.state() != JobState::restarting || st.preflight || st.retry_pending) return;
  if (!st.code.ranks().all_done()) return;
  // Enough pods on untainted nodes (spares included)? Else keep waiting.
  if (auto chosen = select_active(self); !chosen) {
    st.log->info("restart waits: {}", chosen.error());
    return;
  }
  preflight(self);
}

namespace {

// `counted`: the fault used one restart of the budget (a delete while parked
// in a debug state uses none).
void begin_restart(Actor* self, const Fault& fault, bool counted) {
  auto& st = self->state;
  const JobState before = st.state();
  apply(self, JobEvent::restart);
  std::string line = counted
                         ? "job restarting (restart " + std::to_string(st.restarts.used()) + "/" +
                               std::to_string(st.restarts.budget()) + "): " + fault.detail
                         : "job restarting (from " + std::string(to_string(before)) +
                               ": no restart used, " + std::to_string(st.restarts.used()) + "/" +
                               std::to_string(st.restarts.budget()) + "): " + fault.detail;
  st.log->warn("{}", line);
  record(self, "restart", line);
  self->send(st.config.sink, print_atom::value, line);
  st.preflight.reset();  // a pre-flight under way is moot
  if (before == JobState::debugCommand && st.debug.tracked() != 0) {
    // The debug command that held the job ends with the attempt it parked.
    const RunId run = st.debug.release_tracked();
    auto grace = static_cast<std::int64_t>(st.job().grace.count());
    for (const auto& [pod, node] : st.pods.joined_pods())
      self->send(node.agent, stop_atom::value, StreamId::of_run(run, 0), grace);
  }
  const std::int32_t restart = ++st.restart_round;
  if (!st.code.ranks().all_done()) {
    stop_user_code(self);
    self->delayed_send(self, st.job().grace + kStopSlack, timeout_atom::value,
                       static_cast<std::int32_t>(kRestartStopTimer), restart);
  }
  // Pods must be back (and pass the pre-flight) within the ready timeout.
  self->delayed_send(self, st.job().ready_timeout, timeout_atom::value,
                     static_cast<std::int32_t>(kReadyTimer), restart);
  if (fault.kind == FaultKind::preflight_failed) {
    st.retry_pending = true;  // the same check at once would fail the same way
    self->delayed_send(self, kRetryPause, timeout_atom::value,
                       static_cast<std::int32_t>(kRestartRetryTimer), restart);
    return;
  }
  maybe_relaunch(self);
}

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

// Every fault goes through the RestartPolicy: restart, fail, or carry on.
void on_fault(Actor* self, const Fault& reported) {
  auto& st = self->state;
  Fault fault = reported;
  fault.attempt = st.code.attempt();  // the attempt it ends (status -v, logs/attempt-K)
  const size_t counted_before = st.restarts.history().size();
  const JobState state = st.state();
  switch (st.restarts.respond(state, fault)) {
    case FaultResponse::restart:
    case FaultResponse::restart_uncounted:
      record(self, "fault", fault.detail);
      begin_restart(self, fault, st.restarts.history().size() > counted_before);
      return;
    case FaultResponse::carry_on:
      if (state == JobState::command) {  // driver mode: the driver goes on
        record(self, "fault",
               fault.detail + " (driver mode: the driver goes on, the pod is awaited)");
        st.log->warn("{}: the driver goes on; the pod is awaited", fault.detail);
      } else if (!is_terminal(state)) {
        record(self, "fault",
               fault.detail + " (no restart in state " + std::string(to_string(state)) + ")");
        st.log->warn("{}: nothing to restart in state {}", fault.detail, to_string(state));
      }
      return;
    case FaultResponse::fail:
      break;
  }
  record(self, "fault", fault.detail);
  if (st.restarts.history().size() > counted_before) {
    fail(self, failure_event(fault.kind),
         fault.detail + "; the restart budget is spent (" + std::to_string(st.restarts.used()) +
             "/" + std::to_string(st.restarts.budget()) + " restarts used)");
  } else {
    fail(self, failure_event(fault.kind), fault.detail);
  }
}

// Pods did not all come (back) within the ready timeout: a fault like the
// others (seed 002: a clear error, then retried per the policy), in every
// mode. A retry waits for them again; a spent budget fails the job naming them.
void on_ready_timeout(Actor* self, const std::string& detail) {
  auto& st = self->state;
  st.log->warn("{}", detail);
  self->send(st.config.sink, print_atom::value, detail);
  on_fault(self, {FaultKind::ready_timeout, "", detail});
}

namespace {

// Whether the job could still start with `node` tainted (the same choice
// select_active makes, on a copy of the taints).
bool spare_available(const State& st, const std::string& node) {
  TaintSet with_node = st.taints;
  with_node.mark(node, "", 0);
  return choose_active(pod_views(st), st.job().workers, with_node).ok();
}

}  // namespace

// `pod` is gone (lost, silent or deleted): its ranks and debug runs end, and
// the fault takes its course. The pod may join again later, as a new process.
void lose_pod(Actor* self, const std::string& pod, const Fault& fault) {
  auto& st = self->state;
  // In pending it is just missing again; after the start it is awaited as lost.
  auto agent = st.pods.leave(pod, st.state() != JobState::pending);
  if (!agent) return;
  self->demonitor(*agent);
  st.liveness.forget(pod);
  on_pod_lost_tasks(self, pod);      // its tasks ended with it
  on_pod_lost_placement(self, pod);  // its bundles are placed again first
  // A spare (no ranks now) is simply awaited again; so is any pod before the start.
  bool active = std::find(st.active.begin(), st.active.end(), pod) != st.active.end();
  if (!active && st.state() != JobState::pending && !is_terminal(st.state())) {
    record(self, "pod", fault.detail + " (a spare: no restart)");
    st.log->warn("{} (a spare: no restart)", fault.detail);
    return;
  }
  if (active && fault.kind != FaultKind::pod_deleted && !is_terminal(st.state())) {
    // The same node lost twice in a row is not to be trusted again, when a
    // spare can take its place: a taint that leaves too few pods would stop
    // the job where the node might well have come back.
    const std::string* machine = st.pods.machine_of(pod);
    const std::string node = machine ? *machine : std::string();
    if (!node.empty() && node == st.last_lost_node) {
      if (spare_available(st, node)) {
        taint_platform(self, pod, "lost twice in a row (" + fault.detail + ")");
      } else {
        st.log->warn("node {} lost twice in a row; not tainted: no spare could take its place",
                     node);
      }
    }
    st.last_lost_node = node;
  }
  st.code.pod_lost(pod);  // its ranks, through a per-pod index (not a walk over the job's)
  // Debug commands on that pod end too (their waiters get an answer).
  for (const auto& [id, rank] : st.debug.running_on(pod)) {
    RankExit lost{StreamId::of_run(id, rank), id, pod, 255, 0, "pod lost"};
    on_debug_exit(self, lost, lost.stream);
  }
  // A pre-flight under way is moot: in restarting the pod is awaited and the
  // pre-flight reruns when it is back; in initializing the loss decides.
  st.preflight.reset();
  if (st.state() == JobState::pending) {
    st.log->warn("{} before the job started; waiting for it again", fault.detail);
    apply(self, JobEvent::node_lost);
  } else if (!is_terminal(st.state())) {
    on_fault(self, fault);
    // In debug states the pod is awaited; a stop waiting for its ranks is done.
    if (st.state() == JobState::debugStop || st.state() == JobState::debugCommand) {
      if (st.job().mode == JobMode::ray) on_ray_node_gone_while_parked(self, fault.detail);
      on_user_code_progress(self);
    }
  } else if (st.code.ranks().all_done()) {
    finalize(self);
  }
}

// The liveness timer: heartbeats out once per interval, silent pods fenced and lost.
void on_heartbeat_tick(Actor* self) {
  auto& st = self->state;
  if (st.finalizing) return;
  auto tick = st.liveness.tick(std::chrono::steady_clock::now());
  // A stall of the supervisor itself: requests (atlctl, the dashboard)
  // waited as long. Said in the log, so that one can be traced afterwards.
  if (tick.stall)
    st.log->warn("the supervisor was busy for {} ms (its liveness tick came that late)",
                 tick.stall->count());
  if (tick.send_heartbeats) {
    for (const auto& [pod, node] : st.pods.joined_pods())
      self->send<caf::message_priority::high>(node.agent, heartbeat_atom::value);
    ping_actor_hosts(self);  // a frozen host's callers hear of it within the timeout
  }
  // Deadlines of pending groups, taints and spares changing: placement catches up.
  refresh_placement(self);
  for (const auto& pod : tick.silent) {
    const JoinedPod* node = st.pods.find(pod);
    if (!node) continue;
    std::string detail = "pod " + pod + " stopped answering (no heartbeat for " +
                         format_duration(st.job().heartbeat.timeout) + ")";
    // Fenced: if it ever wakes up it kills its ranks and leaves (its lease
    // has run out by then, so they are dead already).
    self->send(node->agent, fence_atom::value, detail);
    lose_pod(self, pod, {FaultKind::pod_hung, pod, detail});
  }
  // High priority, as the heartbeats: liveness goes ahead of a flood of rank
  // reports (32,000 ranks ending at once took seconds to read).
  self->delayed_send<caf::message_priority::high>(
      self, st.liveness.tick_interval(), timeout_atom::value,
      static_cast<std::int32_t>(kHeartbeatTimer), std::int32_t{0});
}

namespace {

// atlctl taint -a list|set|remove [-n NODES|all]: marks on the machines pods
// run on. A bad argument refuses the whole command and changes nothing.
}  // namespace

Result taint_nodes(Actor* self, const std::string& action, const std::string& node_text) {
  auto& st = self->state;
  if (action == "list") {
    if (!node_text.empty()) return {wire(ReplyCode::usage), "-n is only for set and remove"};
    return {wire(ReplyCode::ok),
            taints_view(st).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
  if (action != "set" && action != "remove")
    return {wire(ReplyCode::usage),
            "-a: unknown action " + quote(action) + " (list, set or remove)"};
  auto nodes = parse_node_list(node_text);
  if (!nodes) return {wire(ReplyCode::usage), "-n: " + nodes.error()};
  if (is_terminal(st.state()) || st.finalizing)
    return {wire(ReplyCode::refused), "job is in state " + std::string(to_string(st.state())) +
                                          ": it has ended, taint is refused"};
  Status done = Ok{};
  if (action == "set") {
    done = st.taints.set(*nodes, st.pods.machines(), TaintSource::user, "set by atlctl taint",
                         unix_ms_now());
  } else {
    done = st.taints.remove(*nodes);
  }
  if (!done) return {wire(ReplyCode::usage), done.error()};
  persist(self);
  refresh_placement(self);
  std::string line = "taint " + action + " on " + node_text + " (atlctl taint)";
  st.log->info("{}", line);
  record(self, "taint", line);
  // A restart waiting for untainted pods may go on now.
  if (action == "remove") maybe_relaunch(self);
  return {wire(ReplyCode::ok), std::string()};
}

// atlctl delete -p PODS|all: refused as a whole (nothing deleted) when a pod
// is unknown or not there; else each pod leaves and is recreated.
Result delete_pods(Actor* self, const std::string& spec) {
  auto& st = self->state;
  const JobState state = st.state();
  if (is_terminal(state) || st.finalizing)
    return {wire(ReplyCode::refused), "job is in state " + std::string(to_string(state)) +
                                          ": it has ended, delete is refused"};
  auto chosen = st.pods.select_for_delete(spec);
  if (auto* refused = std::get_if<Refusal>(&chosen)) return {wire(refused->code), refused->text};
  for (const auto& pod : std::get<std::vector<std::string>>(chosen)) {
    std::string detail = "pod " + pod + " was deleted (atlctl delete)";
    record(self, "delete", detail);
    self->send(st.pods.at(pod).agent, delete_atom::value, std::string("atlctl delete"));
    lose_pod(self, pod, {FaultKind::pod_deleted, pod, detail});
  }
  return {wire(ReplyCode::ok), std::string()};
}

}  // namespace atl::supervisor
