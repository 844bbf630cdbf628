// Taints and the choice of active pods. Pure: the supervisor keeps a TaintSet
// (user- and platform-set marks on nodes, the machines pods run on) and asks
// choose_active() which pods get node ranks at each (re)start.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl {

enum class TaintSource { user, platform };

std::string_view to_string(TaintSource source);

struct Taint {
  TaintSource source = TaintSource::user;
  std::string reason;
  std::int64_t since_unix_ms = 0;
};

// "node1,node2" or "all" as atlctl taint -n gives them; an error names an
// empty item. "all" is returned as the single item "all".
Expected<std::vector<std::string>> parse_node_list(std::string_view text);

class TaintSet {
 public:
  // Marks `nodes`; every one must be in `known` (the job's nodes), else
  // nothing changes and the error names the first unknown one. A node tainted
  // already keeps its first mark, unless a user taint replaces a platform one.
  Status set(const std::vector<std::string>& nodes, const std::vector<std::string>& known,
             TaintSource source, const std::string& reason, std::int64_t now_ms);

  // Removes the marks of `nodes` ("all": every mark). A node that is not
  // tainted refuses the whole call.
  Status remove(const std::vector<std::string>& nodes);

  // What the platform marks itself (a failed pre-flight or check, a lost GPU,
  // a node lost twice in a row): never refused, never replaces a user mark.
  void mark(const std::string& node, const std::string& reason, std::int64_t now_ms);

  bool tainted(const std::string& node) const { return taints_.count(node) > 0; }
  const std::map<std::string, Taint>& all() const { return taints_; }
  void restore(std::map<std::string, Taint> taints) {
    taints_ = std::move(taints);
    ++changes_;
  }
  // Grows with every change of the marks (what a view made of them keys on).
  std::uint64_t changes() const { return changes_; }

 private:
  std::map<std::string, Taint> taints_;
  std::uint64_t changes_ = 0;
};

// A pod as the choice sees it: its index (worker-<index>), its node, and
// whether it is in the job now.
struct PodView {
  std::string name;
  int index = 0;
  std::string node;
  bool joined = false;
};

struct PodChoice {
  std::vector<std::string> active;       // node rank k = active[k]
  std::vector<std::string> spares;       // joined, untainted, idle
  std::vector<std::string> quarantined;  // joined, on a tainted node: never given ranks
};

// The `needed` joined pods on untainted nodes with the lowest indices become
// active (node rank = position); the other untainted ones are spares. Empty
// `active` with an error when too few are there: the error names what is
// missing and what is tainted.
Expected<PodChoice> choose_active(const std::vector<PodView>& pods, int needed,
                                  const TaintSet& taints);

}  // namespace atl
