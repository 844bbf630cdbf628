// The shell's side of the pods' comings and goings: the PodCourse decides
// (a pod lost, silent, evicted, deleted, its GPU gone; the liveness timer);
// this file hands it the inputs and performs its effects, a pod gone
// fanning out to its tasks, its bundles and the controller. atlctl taint.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// What a GPU report is judged against: whether a pre-flight found the pod's
// GPUs, whether its ranks run, whether its machine is tainted.
GpuView gpu_view(const State& st, const std::string& pod) {
  const JobState state = st.state();
  const std::string* machine = st.pods.registry().machine_of(pod);
  GpuView view;
  view.checked =
      state == JobState::command || state == JobState::debugStop || state == JobState::debugCommand;
  view.runs_ranks = st.controller.is_active(pod) &&
                    (state == JobState::command || state == JobState::debugCommand);
  view.machine_tainted = machine && st.taints().tainted(*machine);
  return view;
}

void perform(Actor* self, Pods::Effects effects) {
  auto& st = self->state;
  for (auto& effect : effects) {
    if (std::holds_alternative<pods::HeartbeatRound>(effect)) {
      ping_actor_hosts(self);  // a frozen host's callers hear of it within the timeout
    } else if (auto* e = std::get_if<pods::Heartbeat<caf::actor>>(&effect)) {
      self->send<caf::message_priority::high>(e->agent, heartbeat_atom::value);
    } else if (auto* e = std::get_if<pods::Fence<caf::actor>>(&effect)) {
      self->send(e->agent, fence_atom::value, std::move(e->detail));
    } else if (auto* e = std::get_if<pods::Delete<caf::actor>>(&effect)) {
      self->send(e->agent, delete_atom::value, std::move(e->detail));
    } else if (auto* e = std::get_if<pods::Forget<caf::actor>>(&effect)) {
      self->demonitor(e->agent);
    } else if (auto* e = std::get_if<pods::Gone>(&effect)) {
      // The one fan-out of a pod gone: its tasks ended with it, its bundles
      // are placed again first, then the controller (its ranks and debug
      // runs, the fault's course). It may join again later.
      on_pod_lost_tasks(self, e->pod);
      on_pod_lost_placement(self, e->pod);
      st.controller.on_pod_gone(e->pod, e->fault);
    } else if (auto* e = std::get_if<pods::Record>(&effect)) {
      st.controller.record(e->kind, e->text);
    } else if (auto* e = std::get_if<pods::TaintPlatform>(&effect)) {
      st.controller.taint_platform(e->pod, e->detail);
    } else if (auto* e = std::get_if<pods::Stalled>(&effect)) {
      // Requests (atlctl, the dashboard) waited as long.
      st.log->warn("the supervisor was busy for {} ms (its liveness tick came that late)",
                   e->late.count());
    }
  }
}

bool started(const State& st) { return st.state() != JobState::pending; }

}  // namespace

void lose_pod(Actor* self, const std::string& pod, const Fault& fault) {
  perform(self, self->state.pods.lose(pod, fault, started(self->state)));
}

void evict_pod(Actor* self, const std::string& pod, const std::string& why) {
  perform(self, self->state.pods.evict(pod, why, started(self->state)));
}

// A pod's heartbeat (from its own node) with its count of GPUs.
void on_pod_heartbeat(Actor* self, const std::string& pod, std::int32_t gpus_present) {
  auto& st = self->state;
  perform(self, st.pods.on_heartbeat(pod, gpus_present, gpu_view(st, pod),
                                     std::chrono::steady_clock::now(), started(st)));
}

void on_pod_gpu_fault(Actor* self, const std::string& pod, const std::string& reason) {
  auto& st = self->state;
  bool quarantined = false;
  perform(self, st.pods.on_gpu_fault(pod, reason, gpu_view(st, pod), started(st), &quarantined));
  if (quarantined)
    st.log->warn("pod {} (quarantined on a tainted machine) reports a GPU fault: {}", pod, reason);
}

// The liveness timer: heartbeats out once per interval, silent pods fenced and lost.
void on_heartbeat_tick(Actor* self) {
  auto& st = self->state;
  if (st.ending()) return;
  const auto now = std::chrono::steady_clock::now();
  perform(self, st.pods.on_tick(now, started(st)));
  // Deadlines of pending groups, taints and spares changing: placement catches up.
  refresh_placement(self);
  watch_for_hangs(self, now);
  // High priority, as the heartbeats: liveness goes ahead of a flood of rank
  // reports (32,000 ranks ending at once took seconds to read).
  self->delayed_send<caf::message_priority::high>(
      self, st.pods.liveness().tick_interval(), timeout_atom::value,
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
  if (auto refused = st.controller.change_taints(action, node_text, st.pods.registry().machines()))
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
  auto done = st.pods.delete_pods(spec, started(st));
  if (auto* refused = std::get_if<Refusal>(&done)) return {wire(refused->code), refused->text};
  perform(self, std::move(std::get<Pods::Effects>(done)));
  return {wire(ReplyCode::ok), std::string()};
}

}  // namespace atl::supervisor
