#include "atl/core/taints.hpp"

#include <algorithm>

#include "atl/core/quote.hpp"
#include "atl/core/split.hpp"

namespace atl {

std::string_view to_string(TaintSource source) {
  return source == TaintSource::user ? "user" : "platform";
}

Expected<std::vector<std::string>> parse_node_list(std::string_view text) {
  if (text.empty()) return make_error("empty node list: give NODE[,NODE...] or all");
  if (text == "all") return std::vector<std::string>{"all"};
  std::vector<std::string> nodes;
  for (std::string_view item : split_list(text)) {
    if (item.empty()) return make_error("empty node name in " + quote(text));
    if (item == "all") return make_error("'all' cannot be mixed with node names");
    std::string name(item);
    if (std::find(nodes.begin(), nodes.end(), name) != nodes.end())
      return make_error("node " + quote(name) + " named twice in " + quote(text) +
                        ": name each node once");
    nodes.push_back(name);
  }
  return nodes;
}

Status TaintSet::set(const std::vector<std::string>& nodes, const std::vector<std::string>& known,
                     TaintSource source, const std::string& reason, std::int64_t now_ms) {
  std::vector<std::string> targets = nodes;
  if (nodes.size() == 1 && nodes[0] == "all") targets = known;
  if (targets.empty()) return make_error("no node to taint: the job has no nodes yet");
  for (const auto& node : targets) {
    if (std::find(known.begin(), known.end(), node) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return make_error("unknown node " + quote(node) + ": the job's nodes are " +
                        (list.empty() ? std::string("none yet") : list));
    }
  }
  for (const auto& node : targets) {
    auto it = taints_.find(node);
    if (it != taints_.end() &&
        !(source == TaintSource::user && it->second.source == TaintSource::platform))
      continue;
    taints_[node] = Taint{source, reason, now_ms};
    ++changes_;
  }
  return Ok{};
}

Status TaintSet::remove(const std::vector<std::string>& nodes) {
  if (nodes.size() == 1 && nodes[0] == "all") {
    taints_.clear();
    ++changes_;
    return Ok{};
  }
  for (const auto& node : nodes)
    if (!taints_.count(node)) return make_error("node " + quote(node) + " is not tainted");
  for (const auto& node : nodes) taints_.erase(node);
  ++changes_;
  return Ok{};
}

void TaintSet::mark(const std::string& node, const std::string& reason, std::int64_t now_ms) {
  if (node.empty() || taints_.count(node)) return;
  taints_[node] = Taint{TaintSource::platform, reason, now_ms};
  ++changes_;
}

Expected<PodChoice> choose_active(const std::vector<PodView>& pods, int needed,
                                  const TaintSet& taints) {
  std::vector<const PodView*> order;
  for (const auto& p : pods) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const PodView* a, const PodView* b) { return a->index < b->index; });
  PodChoice choice;
  std::string missing, quarantined;
  for (const PodView* p : order) {
    if (!p->joined) {
      missing += (missing.empty() ? "" : ", ") + p->name;
      continue;
    }
    if (taints.tainted(p->node)) {
      choice.quarantined.push_back(p->name);
      quarantined += (quarantined.empty() ? "" : ", ") + p->name + " (node " + p->node + ")";
      continue;
    }
    if (static_cast<int>(choice.active.size()) < needed) {
      choice.active.push_back(p->name);
    } else {
      choice.spares.push_back(p->name);
    }
  }
  if (static_cast<int>(choice.active.size()) < needed) {
    std::string why = std::to_string(choice.active.size()) + " of " + std::to_string(needed) +
                      " pods available on untainted nodes";
    if (!missing.empty()) why += "; not joined: " + missing;
    if (!quarantined.empty()) why += "; on tainted nodes: " + quarantined;
    return make_error(why);
  }
  return choice;
}

}  // namespace atl
