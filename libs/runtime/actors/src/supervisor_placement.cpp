// Placement groups on the JobSupervisor: the decisions are core's
// (PlacementGroups, place_bundles); this file feeds it the joined pods and
// answers the callers (create, wait, remove, cluster state).
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "atl/core/quote.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

Result usage(const std::string& text) { return {wire(ReplyCode::usage), text}; }
Result refused(const std::string& text) { return {wire(ReplyCode::refused), text}; }

nlohmann::json amounts(const Resources& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, units] : r)
    j[name] = static_cast<double>(units) / static_cast<double>(kResourceUnit);
  return j;
}

nlohmann::json group_json(const PlacementGroup& g) {
  nlohmann::json bundles = nlohmann::json::array();
  for (const auto& b : g.spec.bundles) bundles.push_back(amounts(b));
  nlohmann::json j{{"id", g.id},
                   {"name", g.spec.name},
                   {"strategy", std::string(to_string(g.spec.strategy))},
                   {"state", std::string(to_string(g.state))},
                   {"bundles", bundles},
                   {"nodes", g.nodes},
                   {"created_ms", g.created_ms}};
  if (!g.why.empty()) j["why"] = g.why;
  return j;
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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
  nodes.reserve(st.pods.registry().joined_count());
  // A set, not a search of st.active() per pod: O(pods^2) string compares at
  // thousands of pods, on every placement group created.
  const std::unordered_set<std::string_view> actives(st.active().begin(), st.active().end());
  for (const auto& [pod, node] : st.pods.registry().joined_pods()) {
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

void answer_waiters(Actor* self, std::int64_t group) {
  auto& st = self->state;
  const PlacementGroup* g = st.groups.find(group);
  if (!g || g->state == GroupState::pending || g->state == GroupState::rescheduling) return;
  for (auto& reply : st.group_waiters.take(group)) {
    if (!reply.pending()) continue;
    if (g->state == GroupState::created) {
      reply.deliver(wire(ReplyCode::ok), dump(group_json(*g)));
    } else {
      reply.deliver(wire(ReplyCode::failed), "placement group " + std::to_string(group) + " is " +
                                                 std::string(to_string(g->state)) +
                                                 (g->why.empty() ? "" : ": " + g->why));
    }
  }
}

void apply_changes(Actor* self, const std::vector<GroupChange>& changes) {
  auto& st = self->state;
  for (const auto& c : changes) {
    const PlacementGroup* g = st.groups.find(c.id);
    st.log->info("placement group {} {}{}", c.id, to_string(c.state),
                 g && !g->why.empty() ? ": " + g->why : std::string());
    answer_waiters(self, c.id);
  }
}

}  // namespace

void refresh_placement(Actor* self) {
  auto& st = self->state;
  // Nothing waits: nothing to place (joins of a thousand pods stay cheap).
  if (!st.groups.waiting()) return;
  st.groups.set_nodes(placement_nodes(st));
  apply_changes(self, st.groups.schedule(unix_ms_now()));
}

void on_pod_lost_placement(Actor* self, const std::string& pod) {
  auto& st = self->state;
  apply_changes(self, st.groups.lose_node(pod));
  refresh_placement(self);
}

void clear_groups(Actor* self, const std::string& why) {
  auto& st = self->state;
  kill_tasks(self, 0, why);
  for (const auto& [id, g] : st.groups.groups()) {
    if (g.state == GroupState::pending || g.state == GroupState::created ||
        g.state == GroupState::rescheduling) {
      st.groups.remove(id);
    }
  }
  // Every group went: each waiter hears why (its own group's id in the line).
  for (const auto& [id, g] : st.groups.groups())
    for (auto& reply : st.group_waiters.take(id))
      if (reply.pending())
        reply.deliver(wire(ReplyCode::failed),
                      "placement group " + std::to_string(id) + " was removed: " + why);
}

Result create_group(Actor* self, const std::string& name, const std::string& strategy_text,
                    const std::string& bundles_json, std::int64_t timeout_ms) {
  auto& st = self->state;
  if (auto why = placement_refusal(st); !why.empty()) return refused(why);
  auto strategy = parse_placement_strategy(strategy_text);
  if (!strategy) return usage(strategy.error());
  auto list = nlohmann::json::parse(bundles_json, nullptr, false);
  if (list.is_discarded() || !list.is_array())
    return usage("bundles must be a JSON list of objects, got " + quote(bundles_json));
  GroupSpec spec;
  spec.name = name;
  spec.strategy = *strategy;
  for (size_t i = 0; i < list.size(); ++i) {
    auto bundle = parse_bundle(list[i].dump());
    if (!bundle) return usage("bundle " + std::to_string(i) + ": " + bundle.error());
    spec.bundles.push_back(std::move(*bundle));
  }
  if (timeout_ms < 0) return usage("timeout must not be negative");
  const std::int64_t now = unix_ms_now();
  if (timeout_ms > 0) spec.deadline_ms = now + timeout_ms;
  st.groups.set_nodes(placement_nodes(st));
  auto id = st.groups.create(std::move(spec), now);
  if (!id) return usage(id.error());
  const PlacementGroup* g = st.groups.find(*id);
  st.log->info("placement group {} ({} {} bundles): {}{}", *id, to_string(g->spec.strategy),
               g->spec.bundles.size(), to_string(g->state), g->why.empty() ? "" : ": " + g->why);
  // The deadline is checked on the heartbeat tick (every 100 ms).
  return {wire(ReplyCode::ok), dump(group_json(*g))};
}

Result await_group(Actor* self, std::int64_t id, std::int64_t timeout_ms) {
  auto& st = self->state;
  const PlacementGroup* g = st.groups.find(id);
  if (!g) return usage("no placement group " + std::to_string(id));
  if (g->state == GroupState::created) return {wire(ReplyCode::ok), dump(group_json(*g))};
  if (g->state == GroupState::failed || g->state == GroupState::removed)
    return {wire(ReplyCode::failed), "placement group " + std::to_string(id) + " is " +
                                         std::string(to_string(g->state)) +
                                         (g->why.empty() ? "" : ": " + g->why)};
  auto promise = self->make_response_promise<std::int32_t, std::string>();
  WaiterId waiter = st.group_waiters.add(id, promise);
  self->delayed_send(self, std::chrono::milliseconds(std::max<std::int64_t>(timeout_ms, 1)),
                     expire_atom::value, static_cast<std::int32_t>(kGroupWaitTimer), waiter);
  return promise;
}

void on_group_timer(Actor* self, WaiterId waiter) {
  auto& st = self->state;
  auto expired = st.group_waiters.expire(waiter);
  if (!expired) return;  // answered meanwhile
  auto& [group, reply] = *expired;
  const PlacementGroup* g = st.groups.find(group);
  // Not placed in time: a timeout (ReplyCode), not a failure of the group.
  if (reply.pending())
    reply.deliver(wire(ReplyCode::timeout),
                  "placement group " + std::to_string(group) + " is still " +
                      (g ? std::string(to_string(g->state)) : std::string("unknown")) +
                      (g && !g->why.empty() ? ": " + g->why : std::string()));
}

Result remove_group(Actor* self, std::int64_t id) {
  auto& st = self->state;
  auto done = st.groups.remove(id);
  if (!done) return refused(done.error());
  st.log->info("placement group {} removed", id);
  kill_tasks(self, id, "placement group " + std::to_string(id) + " was removed");
  answer_waiters(self, id);
  refresh_placement(self);  // what it held may place others
  return {wire(ReplyCode::ok), std::string()};
}

std::string cluster_json(const State& st) {
  nlohmann::json j;
  j["nodes"] = nlohmann::json::array();
  const auto reservations = st.groups.reservations();
  for (const auto& n : placement_nodes(st)) {
    auto r = reservations.find(n.name);
    const Resources reserved = r == reservations.end() ? Resources{} : r->second;
    nlohmann::json node{{"pod", n.name},
                        {"node", st.pods.registry().at(n.name).info.machine},
                        {"address", st.pods.registry().at(n.name).info.address},
                        {"total", amounts(n.total)},
                        {"reserved", amounts(reserved)},
                        {"available", amounts(subtract(n.total, reserved))}};
    if (!n.unavailable.empty()) node["unavailable"] = n.unavailable;
    j["nodes"].push_back(node);
  }
  j["groups"] = nlohmann::json::array();
  for (const auto& [id, g] : st.groups.groups()) j["groups"].push_back(group_json(g));
  j["pending_demand"] = nlohmann::json::array();
  for (const auto& b : st.groups.pending_demand()) j["pending_demand"].push_back(amounts(b));
  return dump(j);
}

}  // namespace atl::supervisor
