// The shell's side of faults: a pod lost, silent or deleted leaves the
// registry, its tasks and bundles, then the JobController decides its
// course; the liveness timer; atlctl taint and delete. The decisions are
// JobController's, PodRegistry's and Liveness's; this file performs them.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "supervisor_state.hpp"

namespace atl::supervisor {

// `pod` is gone (lost, silent or deleted): it leaves the registry, its tasks
// end and its bundles are placed again; the controller does the rest (its
// ranks and debug runs, the fault's course). It may join again later.
void lose_pod(Actor* self, const std::string& pod, const Fault& fault) {
  auto& st = self->state;
  // In pending it is just missing again; after the start it is awaited as lost.
  auto agent = st.pods.leave(pod, st.state() != JobState::pending);
  if (!agent) return;
  self->demonitor(*agent);
  st.liveness.forget(pod);
  on_pod_lost_tasks(self, pod);      // its tasks ended with it
  on_pod_lost_placement(self, pod);  // its bundles are placed again first
  st.controller.on_pod_gone(pod, fault);
}

void evict_pod(Actor* self, const std::string& pod, const std::string& why) {
  if (!self->state.pods.find(pod)) return;  // lost already, or never joined
  lose_pod(self, pod,
           {FaultKind::pod_lost, pod,
            "pod " + pod + " was lost: told to go (" + why +
                ": evicted, drained or deleted; its ranks get their grace)"});
}

// The liveness timer: heartbeats out once per interval, silent pods fenced and lost.
void on_heartbeat_tick(Actor* self) {
  auto& st = self->state;
  if (st.ending()) return;
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
  watch_for_hangs(self, std::chrono::steady_clock::now());
  // High priority, as the heartbeats: liveness goes ahead of a flood of rank
  // reports (32,000 ranks ending at once took seconds to read).
  self->delayed_send<caf::message_priority::high>(
      self, st.liveness.tick_interval(), timeout_atom::value,
      static_cast<std::int32_t>(kHeartbeatTimer), std::int32_t{0});
}

// atlctl taint -a list|set|remove [-n NODES|all]: marks on the machines pods
// run on. A bad argument refuses the whole command and changes nothing.
Result taint_nodes(Actor* self, const std::string& action, const std::string& node_text) {
  auto& st = self->state;
  if (action == "list") {
    if (!node_text.empty()) return {wire(ReplyCode::usage), "-n is only for set and remove"};
    return {wire(ReplyCode::ok),
            taints_view(st).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
  if (auto refused = st.controller.change_taints(action, node_text, st.pods.machines()))
    return {wire(refused->code), refused->text};
  return {wire(ReplyCode::ok), std::string()};
}

// atlctl delete -p PODS|all: refused as a whole (nothing deleted) when a pod
// is unknown or not there; else each pod leaves and is recreated.
Result delete_pods(Actor* self, const std::string& spec) {
  auto& st = self->state;
  const JobState state = st.state();
  if (is_terminal(state) || st.ending())
    return {wire(ReplyCode::refused), "job is in state " + std::string(to_string(state)) +
                                          ": it has ended, delete is refused"};
  auto chosen = st.pods.select_for_delete(spec);
  if (auto* refused = std::get_if<Refusal>(&chosen)) return {wire(refused->code), refused->text};
  for (const auto& pod : std::get<std::vector<std::string>>(chosen)) {
    std::string detail = "pod " + pod + " was deleted (atlctl delete)";
    st.controller.record("delete", detail);
    self->send(st.pods.at(pod).agent, delete_atom::value, std::string("atlctl delete"));
    lose_pod(self, pod, {FaultKind::pod_deleted, pod, detail});
  }
  return {wire(ReplyCode::ok), std::string()};
}

}  // namespace atl::supervisor
