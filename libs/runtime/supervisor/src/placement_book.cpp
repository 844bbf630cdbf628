#include "atl/supervisor/placement_book.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "atl/core/quote.hpp"

namespace atl::supervisor {

namespace {

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

std::string state_line(std::int64_t id, const PlacementGroup& g, const std::string& is) {
  return "placement group " + std::to_string(id) + " is " + is + std::string(to_string(g.state)) +
         (g.why.empty() ? "" : ": " + g.why);
}

placement::Answer usage(std::string text) { return {0, ReplyCode::usage, std::move(text)}; }

}  // namespace

placement::Answer PlacementBook::create(const std::string& name, const std::string& strategy_text,
                                        const std::string& bundles_json, std::int64_t timeout_ms,
                                        const PlacementNodes& nodes, std::int64_t now_ms,
                                        PlacementEffects& out, std::int64_t* made) {
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
  if (timeout_ms > 0) spec.deadline_ms = now_ms + timeout_ms;
  use(nodes);
  auto id = groups_.create(std::move(spec), now_ms);
  if (!id) return usage(id.error());
  const PlacementGroup* g = groups_.find(*id);
  if (made) *made = *id;
  out.push_back(placement::Say{false, "placement group " + std::to_string(*id) + " (" +
                                          std::string(to_string(g->spec.strategy)) + " " +
                                          std::to_string(g->spec.bundles.size()) +
                                          " bundles): " + std::string(to_string(g->state)) +
                                          (g->why.empty() ? "" : ": " + g->why)});
  // The deadline is met by refresh (the liveness tick).
  return {0, ReplyCode::ok, dump(group_json(*g))};
}

std::optional<placement::Answer> PlacementBook::answer_now(std::int64_t id) const {
  const PlacementGroup* g = groups_.find(id);
  if (!g) return usage("no placement group " + std::to_string(id));
  if (g->state == GroupState::created)
    return placement::Answer{0, ReplyCode::ok, dump(group_json(*g))};
  if (g->state == GroupState::failed || g->state == GroupState::removed)
    return placement::Answer{0, ReplyCode::failed, state_line(id, *g, "")};
  return std::nullopt;
}

void PlacementBook::await(std::int64_t id, ReplyId reply, Millis timeout, PlacementEffects& out) {
  const WaiterId waiter = waiters_.add(id, reply);
  out.push_back(placement::ArmWaitTimer{waiter, std::max(timeout, Millis(1))});
}

void PlacementBook::on_wait_timer(WaiterId waiter, PlacementEffects& out) {
  auto expired = waiters_.expire(waiter);
  if (!expired) return;  // answered meanwhile
  const auto& [group, reply] = *expired;
  const PlacementGroup* g = groups_.find(group);
  // Not placed in time: a timeout (ReplyCode), not a failure of the group.
  out.push_back(
      placement::Answer{reply, ReplyCode::timeout,
                        g ? state_line(group, *g, "still ")
                          : "placement group " + std::to_string(group) + " is still unknown"});
}

placement::Answer PlacementBook::remove(std::int64_t id, const PlacementNodes& nodes,
                                        std::int64_t now_ms, PlacementEffects& out) {
  auto done = groups_.remove(id);
  if (!done) return {0, ReplyCode::refused, done.error()};
  out.push_back(placement::Say{false, "placement group " + std::to_string(id) + " removed"});
  out.push_back(placement::StopTasks{id, "placement group " + std::to_string(id) + " was removed"});
  answer_waiters(id, out);
  refresh(nodes, now_ms, out);  // what it held may place others
  return {0, ReplyCode::ok, ""};
}

void PlacementBook::use(const PlacementNodes& nodes) {
  if (nodes_version_ == nodes.version) return;
  groups_.set_nodes(nodes.make());
  nodes_version_ = nodes.version;
}

void PlacementBook::refresh(const PlacementNodes& nodes, std::int64_t now_ms,
                            PlacementEffects& out) {
  // Nothing waits: nothing to place (joins of a thousand pods stay cheap).
  if (!groups_.waiting()) return;
  use(nodes);
  apply(groups_.schedule(now_ms), out);
}

void PlacementBook::lose_node(const std::string& pod, const PlacementNodes& nodes,
                              std::int64_t now_ms, PlacementEffects& out) {
  apply(groups_.lose_node(pod), out);
  refresh(nodes, now_ms, out);
}

void PlacementBook::clear(const std::string& why, PlacementEffects& out) {
  out.push_back(placement::StopTasks{0, why});
  std::vector<std::int64_t> going;
  for (const auto& [id, g] : groups_.groups())
    if (g.state == GroupState::pending || g.state == GroupState::created ||
        g.state == GroupState::rescheduling)
      going.push_back(id);
  for (std::int64_t id : going) groups_.remove(id);
  // Every group went: each waiter hears why (its own group's id in the line).
  for (const auto& [id, g] : groups_.groups())
    for (ReplyId reply : waiters_.take(id))
      out.push_back(
          placement::Answer{reply, ReplyCode::failed,
                            "placement group " + std::to_string(id) + " was removed: " + why});
}

void PlacementBook::answer_waiters(std::int64_t group, PlacementEffects& out) {
  const PlacementGroup* g = groups_.find(group);
  if (!g || g->state == GroupState::pending || g->state == GroupState::rescheduling) return;
  for (ReplyId reply : waiters_.take(group)) {
    if (g->state == GroupState::created) {
      out.push_back(placement::Answer{reply, ReplyCode::ok, dump(group_json(*g))});
    } else {
      out.push_back(placement::Answer{reply, ReplyCode::failed, state_line(group, *g, "")});
    }
  }
}

void PlacementBook::apply(const std::vector<GroupChange>& changes, PlacementEffects& out) {
  for (const auto& c : changes) {
    const PlacementGroup* g = groups_.find(c.id);
    out.push_back(placement::Say{
        false, "placement group " + std::to_string(c.id) + " " + std::string(to_string(c.state)) +
                   (g && !g->why.empty() ? ": " + g->why : std::string())});
    answer_waiters(c.id, out);
  }
}

std::string PlacementBook::cluster_json(
    const std::vector<PlacementNode>& nodes,
    const std::function<std::pair<std::string, std::string>(const std::string&)>& where) const {
  nlohmann::json j;
  j["nodes"] = nlohmann::json::array();
  const auto reservations = groups_.reservations();
  for (const auto& n : nodes) {
    auto r = reservations.find(n.name);
    const Resources reserved = r == reservations.end() ? Resources{} : r->second;
    const auto [machine, address] = where(n.name);
    nlohmann::json node{{"pod", n.name},
                        {"node", machine},
                        {"address", address},
                        {"total", amounts(n.total)},
                        {"reserved", amounts(reserved)},
                        {"available", amounts(subtract(n.total, reserved))}};
    if (!n.unavailable.empty()) node["unavailable"] = n.unavailable;
    j["nodes"].push_back(node);
  }
  j["groups"] = nlohmann::json::array();
  for (const auto& [id, g] : groups_.groups()) j["groups"].push_back(group_json(g));
  j["pending_demand"] = nlohmann::json::array();
  for (const auto& b : groups_.pending_demand()) j["pending_demand"].push_back(amounts(b));
  return dump(j);
}

}  // namespace atl::supervisor
