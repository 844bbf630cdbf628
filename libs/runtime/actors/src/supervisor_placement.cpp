// Placement groups on the JobSupervisor: the decisions are core's
// (PlacementGroups) and the book's (PlacementBook: requests, waits, changes);
// this file gives it the joined pods as placement sees them and the clock,
// and performs its effects.
#include <string_view>
#include <unordered_set>

#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

Result refused(const std::string& text) { return {wire(ReplyCode::refused), text}; }

// Only driver mode gives the workers' resources out: spmd's ranks and ray
// mode's Ray nodes hold them already.
std::string placement_refusal(const State& st) {
  if (st.job().mode != JobMode::driver)
    return "placement groups need a driver-mode job: in " + std::string(to_string(st.job().mode)) +
           " mode the workers' resources belong to its " +
           (st.job().mode == JobMode::ray ? "Ray nodes (use Ray's own placement groups)" : "ranks");
  if (is_terminal(st.state()) || st.ending())
    return "job is in state " + std::string(to_string(st.state())) +
           ": it has ended, placement is refused";
  return "";
}

std::vector<PlacementNode> placement_nodes(const State& st) {
  std::vector<PlacementNode> nodes;
  nodes.reserve(st.pods().registry().joined_count());
  // A set, not a search of st.active() per pod: O(pods^2) string compares at
  // thousands of pods, on every placement group created.
  const std::unordered_set<std::string_view> actives(st.active().begin(), st.active().end());
  for (const auto& [pod, node] : st.pods().registry().joined_pods()) {
    const NodeInfo& i = node.info;
    PlacementNode n;
    n.name = pod;
    n.total = node_resources(i.cpus, i.gpus, i.memory, i.shm, i.resources);
    auto taint = st.taints().all().find(i.machine);
    bool active = actives.count(pod) > 0;
    if (taint != st.taints().all().end()) {
      n.unavailable = "node " + i.machine + " is tainted (" + taint->second.reason + ")";
    } else if (!st.active().empty() && !active) {
      n.unavailable = "a spare (it takes work when an active pod is lost)";
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

PlacementNodes nodes_of(const State& st) {
  return [&st] { return placement_nodes(st); };
}

// The book's effects: answers to the pg_waits kept in st.group_replies,
// their timers, its lines, the tasks of a group that went.
void perform(Actor* self, const PlacementEffects& effects) {
  auto& st = self->state;
  for (const auto& effect : effects) {
    if (const auto* a = std::get_if<placement::Answer>(&effect)) {
      deliver(st.group_replies, *a);
    } else if (const auto* t = std::get_if<placement::ArmWaitTimer>(&effect)) {
      self->delayed_send(self, t->after, expire_atom::value,
                         static_cast<std::int32_t>(kGroupWaitTimer), t->waiter);
    } else if (const auto* line = std::get_if<placement::Say>(&effect)) {
      say(st, *line);
    } else if (const auto* stop = std::get_if<placement::StopTasks>(&effect)) {
      kill_tasks(self, stop->group, stop->why);
    }
  }
}

Result answer(const placement::Answer& a) { return {wire(a.code), a.text}; }

}  // namespace

void refresh_placement(Actor* self) {
  PlacementEffects out;
  self->state.groups.refresh(nodes_of(self->state), unix_ms_now(), out);
  perform(self, out);
}

void on_pod_lost_placement(Actor* self, const std::string& pod) {
  PlacementEffects out;
  self->state.groups.lose_node(pod, nodes_of(self->state), unix_ms_now(), out);
  perform(self, out);
}

void clear_groups(Actor* self, const std::string& why) {
  PlacementEffects out;
  self->state.groups.clear(why, out);
  perform(self, out);
}

Result create_group(Actor* self, const std::string& name, const std::string& strategy,
                    const std::string& bundles_json, std::int64_t timeout_ms) {
  auto& st = self->state;
  if (auto why = placement_refusal(st); !why.empty()) return refused(why);
  PlacementEffects out;
  auto a =
      st.groups.create(name, strategy, bundles_json, timeout_ms, nodes_of(st), unix_ms_now(), out);
  perform(self, out);
  return answer(a);
}

Result await_group(Actor* self, std::int64_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  if (auto now = st.groups.answer_now(id)) return answer(*now);
  // (A promise takes the request over: made only when the answer waits.)
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  PlacementEffects out;
  st.groups.await(id, st.group_replies.keep(promise), std::chrono::milliseconds(timeout_ms), out);
  perform(self, out);
  return promise;
}

void on_group_timer(Actor* self, WaiterId waiter) {
  PlacementEffects out;
  self->state.groups.on_wait_timer(waiter, out);
  perform(self, out);
}

Result remove_group(Actor* self, std::int64_t id) {
  PlacementEffects out;
  auto a = self->state.groups.remove(id, nodes_of(self->state), unix_ms_now(), out);
  perform(self, out);
  return answer(a);
}

std::string cluster_json(const State& st) {
  return st.groups.cluster_json(placement_nodes(st), [&st](const std::string& pod) {
    const auto& info = st.pods().registry().at(pod).info;
    return std::make_pair(info.machine, info.address);
  });
}

}  // namespace atl::supervisor
