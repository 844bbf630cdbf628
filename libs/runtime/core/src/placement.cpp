#include "atl/core/placement.hpp"

#include <algorithm>
#include <cctype>
#include <functional>

#include "atl/core/quote.hpp"

namespace atl {

std::string_view to_string(PlacementStrategy s) {
  switch (s) {
    case PlacementStrategy::pack:
      return "PACK";
    case PlacementStrategy::spread:
      return "SPREAD";
    case PlacementStrategy::strict_pack:
      return "STRICT_PACK";
    case PlacementStrategy::strict_spread:
      return "STRICT_SPREAD";
  }
  return "?";
}

Expected<PlacementStrategy> parse_placement_strategy(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto s : {PlacementStrategy::pack, PlacementStrategy::spread, PlacementStrategy::strict_pack,
                 PlacementStrategy::strict_spread}) {
    if (upper == to_string(s)) return s;
  }
  return make_error("unknown placement strategy " + quote(text) +
                    " (PACK, SPREAD, STRICT_PACK or STRICT_SPREAD)");
}

std::string_view to_string(GroupState s) {
  switch (s) {
    case GroupState::pending:
      return "PENDING";
    case GroupState::created:
      return "CREATED";
    case GroupState::rescheduling:
      return "RESCHEDULING";
    case GroupState::removed:
      return "REMOVED";
    case GroupState::failed:
      return "FAILED";
  }
  return "?";
}

namespace {

// At most this many nodes are named in a "why" line (a big cluster would
// make it unreadable); the rest are counted.
constexpr size_t kNodesNamed = 6;

// Why `need` does not fit on node `n` now.
std::string node_reason(const PlacementNode& n, const Resources& need, const Resources& free) {
  if (!n.unavailable.empty()) return n.name + ": " + n.unavailable;
  std::string name = first_shortfall(need, free);
  auto total = n.total.find(name);
  if (total == n.total.end() || total->second == 0) return n.name + ": has no " + name;
  auto have = free.find(name);
  return n.name + ": " + name + " " + format_amount(have == free.end() ? 0 : have->second) +
         " of " + format_amount(total->second) + " free";
}

std::string join_reasons(const std::vector<std::string>& reasons) {
  if (reasons.empty()) return "the job has no worker nodes now";
  std::string out;
  for (size_t i = 0; i < reasons.size() && i < kNodesNamed; ++i)
    out += (i ? "; " : "") + reasons[i];
  if (reasons.size() > kNodesNamed)
    out += "; and " + std::to_string(reasons.size() - kNodesNamed) + " more nodes";
  return out;
}

std::string bundle_label(size_t i, const Resources& b) {
  return "bundle " + std::to_string(i) + " " + format_resources(b);
}

bool usable(const PlacementNode& n) { return n.unavailable.empty(); }

// Why bundle `i` fits none of the nodes `allowed` lets it go to.
Error no_node_for(size_t i, const Resources& bundle, const std::vector<PlacementNode>& nodes,
                  const std::vector<Resources>& free,
                  const std::function<std::string(size_t)>& not_allowed) {
  std::vector<std::string> reasons;
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::string why = not_allowed ? not_allowed(n) : std::string();
    reasons.push_back(why.empty() ? node_reason(nodes[n], bundle, free[n])
                                  : nodes[n].name + ": " + why);
  }
  return make_error(bundle_label(i, bundle) + " fits no node: " + join_reasons(reasons));
}

// Each bundle on a node of its own: a maximum bipartite matching (Kuhn's),
// so bundles of different sizes find the nodes that fit them whatever their order.
Expected<std::vector<size_t>> place_strict_spread(const std::vector<Resources>& bundles,
                                                  const std::vector<PlacementNode>& nodes,
                                                  std::vector<std::optional<size_t>> at) {
  std::vector<bool> taken(nodes.size(), false);
  for (const auto& a : at)
    if (a) taken[*a] = true;
  std::vector<size_t> open;  // bundles still to place
  for (size_t i = 0; i < bundles.size(); ++i)
    if (!at[i]) open.push_back(i);
  std::vector<long> owner(nodes.size(), -1);  // node -> index into `open`
  auto can = [&](size_t i, size_t n) {
    return usable(nodes[n]) && !taken[n] && fits(bundles[i], nodes[n].available);
  };
  std::function<bool(size_t, std::vector<bool>&)> augment = [&](size_t k, std::vector<bool>& seen) {
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (seen[n] || !can(open[k], n)) continue;
      seen[n] = true;
      if (owner[n] < 0 || augment(static_cast<size_t>(owner[n]), seen)) {
        owner[n] = static_cast<long>(k);
        return true;
      }
    }
    return false;
  };
  for (size_t k = 0; k < open.size(); ++k) {
    // The lowest free node that fits, else make room by moving earlier ones.
    bool done = false;
    for (size_t n = 0; n < nodes.size() && !done; ++n) {
      if (owner[n] < 0 && can(open[k], n)) {
        owner[n] = static_cast<long>(k);
        done = true;
      }
    }
    std::vector<bool> seen(nodes.size(), false);
    if (done || augment(k, seen)) continue;
    // Say why: which nodes can take none of the bundles still open (lost,
    // tainted, holding a pinned bundle, or too small), or, when enough could,
    // that this bundle fits none of those left to it.
    std::vector<std::string> reasons;
    size_t eligible = 0;
    for (size_t n = 0; n < nodes.size(); ++n) {
      bool any = false;
      for (size_t b : open) any |= can(b, n);
      if (any) {
        ++eligible;
      } else if (taken[n]) {
        reasons.push_back(nodes[n].name + ": holds another bundle of the group");
      } else {
        reasons.push_back(node_reason(nodes[n], bundles[open[k]], nodes[n].available));
      }
    }
    if (eligible < open.size())
      return make_error("STRICT_SPREAD needs " + std::to_string(open.size()) +
                        " nodes of their own, but only " + std::to_string(eligible) +
                        " can take a bundle" +
                        (reasons.empty() ? "" : ": " + join_reasons(reasons)));
    return make_error(bundle_label(open[k], bundles[open[k]]) +
                      " fits none of the nodes left to it (the others hold bigger bundles of the "
                      "group)");
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    if (owner[n] >= 0) at[open[static_cast<size_t>(owner[n])]] = n;
  std::vector<size_t> out;
  for (const auto& a : at) out.push_back(*a);
  return out;
}

Expected<std::vector<size_t>> place_strict_pack(const std::vector<Resources>& bundles,
                                                const std::vector<PlacementNode>& nodes,
                                                std::vector<std::optional<size_t>> at) {
  Resources sum;
  std::optional<size_t> home;
  for (size_t i = 0; i < bundles.size(); ++i) {
    if (at[i]) {
      home = at[i];
    } else {
      sum = add(sum, bundles[i]);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (home && n != *home) continue;  // the rest must join the pinned ones
    if (usable(nodes[n]) && fits(sum, nodes[n].available)) return std::vector<size_t>(at.size(), n);
  }
  // None fits: why, node by node (only now: on a thousand full nodes, saying
  // why of each for every group placed was most of a placement's time).
  std::vector<std::string> reasons;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!home || n == *home) reasons.push_back(node_reason(nodes[n], sum, nodes[n].available));
  return make_error("STRICT_PACK needs " + format_resources(sum) +
                    " on one node: " + join_reasons(reasons));
}

// PACK and SPREAD: one bundle at a time, best effort. PACK prefers a node the
// group already uses (the lowest such), SPREAD the node holding the fewest of
// its bundles (the lowest on a tie); both fall back to any node that fits.
Expected<std::vector<size_t>> place_soft(const std::vector<Resources>& bundles, bool pack,
                                         const std::vector<PlacementNode>& nodes,
                                         std::vector<std::optional<size_t>> at) {
  std::vector<Resources> free;
  for (const auto& n : nodes) free.push_back(n.available);
  std::vector<int> count(nodes.size(), 0);
  for (const auto& a : at)
    if (a) ++count[*a];
  for (size_t i = 0; i < bundles.size(); ++i) {
    if (at[i]) continue;
    std::optional<size_t> best;
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (!usable(nodes[n]) || !fits(bundles[i], free[n])) continue;
      if (!best) {
        best = n;
      } else if (pack ? (count[n] > 0 && count[*best] == 0) : count[n] < count[*best]) {
        best = n;
      }
    }
    if (!best) return no_node_for(i, bundles[i], nodes, free, nullptr);
    at[i] = best;
    free[*best] = subtract(free[*best], bundles[i]);
    ++count[*best];
  }
  std::vector<size_t> out;
  for (const auto& a : at) out.push_back(*a);
  return out;
}

}  // namespace

Expected<std::vector<size_t>> place_bundles(const std::vector<Resources>& bundles,
                                            PlacementStrategy strategy,
                                            const std::vector<PlacementNode>& nodes,
                                            const std::vector<std::optional<size_t>>& fixed) {
  if (bundles.empty()) return make_error("a placement group needs at least one bundle");
  std::vector<std::optional<size_t>> at(bundles.size());
  for (size_t i = 0; i < fixed.size() && i < bundles.size(); ++i) {
    if (fixed[i] && *fixed[i] >= nodes.size())
      return make_error("bundle " + std::to_string(i) + " is pinned to an unknown node");
    at[i] = fixed[i];
  }
  switch (strategy) {
    case PlacementStrategy::strict_spread:
      return place_strict_spread(bundles, nodes, std::move(at));
    case PlacementStrategy::strict_pack:
      return place_strict_pack(bundles, nodes, std::move(at));
    case PlacementStrategy::pack:
      return place_soft(bundles, true, nodes, std::move(at));
    case PlacementStrategy::spread:
      return place_soft(bundles, false, nodes, std::move(at));
  }
  return make_error("unknown placement strategy");
}

// --- PlacementGroups -----------------------------------------------------------

namespace {

bool live(GroupState s) {
  return s == GroupState::pending || s == GroupState::created || s == GroupState::rescheduling;
}

}  // namespace

void PlacementGroups::set_nodes(std::vector<PlacementNode> nodes) {
  nodes_ = std::move(nodes);
  index_.clear();
  for (size_t n = 0; n < nodes_.size(); ++n) {
    index_[nodes_[n].name] = n;
    auto r = reserved_.find(nodes_[n].name);
    nodes_[n].available =
        r == reserved_.end() ? nodes_[n].total : subtract(nodes_[n].total, r->second);
  }
}

void PlacementGroups::hold(const std::string& node, const Resources& bundle, bool take) {
  Resources& held = reserved_[node];
  held = take ? add(held, bundle) : subtract(held, bundle);
  for (auto it = held.begin(); it != held.end();)
    it = it->second == 0 ? held.erase(it) : std::next(it);
  auto n = index_.find(node);
  if (n != index_.end()) nodes_[n->second].available = subtract(nodes_[n->second].total, held);
  if (held.empty()) reserved_.erase(node);
}

void PlacementGroups::release_all(PlacementGroup& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].empty()) hold(g.nodes[i], g.spec.bundles[i], false);
  g.nodes.assign(g.nodes.size(), "");
}

Expected<std::int64_t> PlacementGroups::create(GroupSpec spec, std::int64_t now_ms) {
  if (spec.bundles.empty()) return make_error("a placement group needs at least one bundle");
  for (size_t i = 0; i < spec.bundles.size(); ++i) {
    bool some = false;
    for (const auto& [name, units] : spec.bundles[i]) {
      if (units < 0)
        return make_error("bundle " + std::to_string(i) + " asks for less than 0 " + name);
      some |= units > 0;
    }
    if (!some) return make_error("bundle " + std::to_string(i) + " asks for nothing");
  }
  if (!spec.name.empty() && find(spec.name))
    return make_error("a placement group named " + quote(spec.name) + " exists already");
  PlacementGroup g;
  g.id = next_id_++;
  g.nodes.assign(spec.bundles.size(), "");
  g.spec = std::move(spec);
  g.created_ms = now_ms;
  try_place(g);
  auto id = g.id;
  groups_.emplace(id, std::move(g));
  return id;
}

Status PlacementGroups::remove(std::int64_t id) {
  auto it = groups_.find(id);
  if (it == groups_.end()) return make_error("no placement group " + std::to_string(id));
  if (!live(it->second.state))
    return make_error("placement group " + std::to_string(id) + " is " +
                      std::string(to_string(it->second.state)) + " already");
  it->second.state = GroupState::removed;
  release_all(it->second);
  it->second.why.clear();
  ended(id);
  return Ok{};
}

void PlacementGroups::ended(std::int64_t id) {
  ended_.push_back(id);
  while (ended_.size() > kEndedKept) {
    groups_.erase(ended_.front());
    ended_.pop_front();
  }
}

std::vector<GroupChange> PlacementGroups::lose_node(const std::string& node) {
  std::vector<GroupChange> changes;
  for (auto& [id, g] : groups_) {
    if (!live(g.state)) continue;
    bool hit = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i] == node) {
        hold(node, g.spec.bundles[i], false);
        g.nodes[i].clear();
        hit = true;
      }
    }
    if (hit && g.state == GroupState::created) {
      g.state = GroupState::rescheduling;
      g.why = "node " + node + " was lost; its bundles wait to be placed again";
      changes.push_back({id, g.state});
    }
  }
  return changes;
}

std::vector<GroupChange> PlacementGroups::schedule(std::int64_t now_ms) {
  std::vector<GroupChange> changes;
  for (GroupState wanted : {GroupState::rescheduling, GroupState::pending}) {
    for (auto& [id, g] : groups_) {
      if (g.state != wanted) continue;
      if (try_place(g)) changes.push_back({id, g.state});
    }
  }
  for (auto& [id, g] : groups_) {
    if (g.state == GroupState::pending && g.spec.deadline_ms > 0 && now_ms >= g.spec.deadline_ms) {
      g.state = GroupState::failed;
      g.why = "not placed by its deadline: " + g.why;
      release_all(g);
      changes.push_back({id, g.state});
    }
  }
  for (const auto& c : changes)
    if (c.state == GroupState::failed) ended(c.id);  // after the walk: it erases
  return changes;
}

bool PlacementGroups::try_place(PlacementGroup& g) {
  // nodes_ carries what is free on each node now (kept as groups change).
  std::vector<std::optional<size_t>> fixed(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].empty()) continue;
    if (auto n = index_.find(g.nodes[i]); n != index_.end()) fixed[i] = n->second;
  }
  auto placed = place_bundles(g.spec.bundles, g.spec.strategy, nodes_, fixed);
  if (!placed) {
    g.why = placed.error();
    return false;
  }
  for (size_t i = 0; i < placed->size(); ++i) {
    const std::string& target = nodes_[(*placed)[i]].name;
    if (g.nodes[i] == target) continue;  // pinned there: held already
    // (A pinned node that is gone from the node list was not pinned: moved.)
    if (!g.nodes[i].empty()) hold(g.nodes[i], g.spec.bundles[i], false);
    g.nodes[i] = target;
    hold(target, g.spec.bundles[i], true);
  }
  g.state = GroupState::created;
  g.why.clear();
  return true;
}

std::map<std::string, Resources> PlacementGroups::reservations() const { return reserved_; }

bool PlacementGroups::waiting() const {
  for (const auto& [id, g] : groups_)
    if (g.state == GroupState::pending || g.state == GroupState::rescheduling) return true;
  return false;
}

const PlacementGroup* PlacementGroups::find(std::int64_t id) const {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : &it->second;
}

const PlacementGroup* PlacementGroups::find(const std::string& name) const {
  for (const auto& [id, g] : groups_)
    if (live(g.state) && g.spec.name == name) return &g;
  return nullptr;
}

Resources PlacementGroups::reserved_on(const std::string& node) const {
  auto it = reserved_.find(node);
  return it == reserved_.end() ? Resources{} : it->second;
}

Resources PlacementGroups::available_on(const std::string& node) const {
  auto n = index_.find(node);
  return n == index_.end() ? Resources{} : nodes_[n->second].available;
}

std::vector<Resources> PlacementGroups::pending_demand() const {
  std::vector<Resources> out;
  for (const auto& [id, g] : groups_) {
    if (g.state != GroupState::pending && g.state != GroupState::rescheduling) continue;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].empty()) out.push_back(g.spec.bundles[i]);
  }
  return out;
}

}  // namespace atl
