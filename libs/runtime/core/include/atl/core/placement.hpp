// Ray-style placement: bundles of resources placed on nodes by a strategy
// (PACK, SPREAD, STRICT_PACK, STRICT_SPREAD), and the table of placement
// groups that reserves them atomically. Pure: the supervisor feeds it nodes
// and requests and performs what it decides.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/core/resources.hpp"

namespace atl {

// Ray's meanings:
// - pack: as few nodes as possible; spills over when one is not enough.
// - spread: each bundle on another node when possible; shares nodes if not.
// - strict_pack: every bundle on one node, or not placed.
// - strict_spread: every bundle on a node of its own, or not placed.
enum class PlacementStrategy { pack, spread, strict_pack, strict_spread };

std::string_view to_string(PlacementStrategy s);  // "PACK", ...
// "PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD" (Ray's spelling; any case).
Expected<PlacementStrategy> parse_placement_strategy(std::string_view text);

// A node as placement sees it: what is free on it now, or why it takes nothing.
struct PlacementNode {
  std::string name;         // the pod
  Resources available;      // total minus what groups reserved
  Resources total;          // for the "why" text
  std::string unavailable;  // non-empty: takes no bundle (tainted, lost...), and why
};

// Where each bundle goes (an index into `nodes`), or why it cannot go
// anywhere now: which bundle, and what each node lacked. `fixed[i]` (when
// given) pins bundle i where it already is: only the others are placed, and
// the strategy counts the pinned ones (a re-placement after a node loss).
Expected<std::vector<size_t>> place_bundles(const std::vector<Resources>& bundles,
                                            PlacementStrategy strategy,
                                            const std::vector<PlacementNode>& nodes,
                                            const std::vector<std::optional<size_t>>& fixed = {});

// --- the table of placement groups -------------------------------------------

enum class GroupState {
  pending,       // not placed yet; `why` says what is missing
  created,       // every bundle reserved
  rescheduling,  // a node with some of its bundles was lost; those are re-placed first
  removed,       // by its owner (or its owner ended); its resources are free
  failed,        // not placed before its deadline
};

std::string_view to_string(GroupState s);  // "PENDING", "CREATED", ...

struct GroupSpec {
  std::string name;  // optional; unique among live groups when given
  std::vector<Resources> bundles;
  PlacementStrategy strategy = PlacementStrategy::pack;
  std::int64_t deadline_ms = 0;  // a pending group fails at this time (0: waits for ever)
};

struct PlacementGroup {
  std::int64_t id = 0;
  GroupSpec spec;
  GroupState state = GroupState::pending;
  std::vector<std::string> nodes;  // each bundle's node ("" while not placed)
  std::string why;                 // pending/rescheduling: what is missing; failed: why
  std::int64_t created_ms = 0;     // when it asked
};

// What a call changed, for the supervisor to act on (answer waiters, stop the
// tasks of a removed group, say why in the log).
struct GroupChange {
  std::int64_t id = 0;
  GroupState state = GroupState::pending;
};

class PlacementGroups {
 public:
  // The nodes as they are now (joined, with their totals; `unavailable` set
  // for tainted ones). Lost nodes are simply left out: see lose_node.
  void set_nodes(std::vector<PlacementNode> nodes);

  // Validates and records a group, and places it if it can (else pending, or
  // an error for a request that can never be valid: no bundles, a name taken).
  Expected<std::int64_t> create(GroupSpec spec, std::int64_t now_ms);

  // Frees a group's resources. Unknown or already removed: an error, nothing changes.
  Status remove(std::int64_t id);

  // The bundles on `node` are gone: their groups go to rescheduling (their
  // other bundles keep their nodes). Call before set_nodes without it.
  std::vector<GroupChange> lose_node(const std::string& node);

  // Places what waits, in order: rescheduling groups first, then pending ones
  // oldest first; fails pending groups past their deadline. Each placement is
  // all or nothing. Returns the groups whose state changed.
  std::vector<GroupChange> schedule(std::int64_t now_ms);

  const PlacementGroup* find(std::int64_t id) const;
  const PlacementGroup* find(const std::string& name) const;
  // Live groups, and the newest kEndedKept ended ones (removed, failed: for
  // a late wait's answer and the status); older ended ones are forgotten.
  const std::map<std::int64_t, PlacementGroup>& groups() const { return groups_; }
  static constexpr size_t kEndedKept = 1000;

  // What groups reserve on each node (one pass over the groups), on `node`,
  // and what is left of its total.
  std::map<std::string, Resources> reservations() const;
  Resources reserved_on(const std::string& node) const;
  Resources available_on(const std::string& node) const;
  // Whether any group waits to be placed (pending or rescheduling): only
  // then do node changes and the clock matter to schedule().
  bool waiting() const;
  // Pending demand: the bundles of pending and rescheduling groups not yet placed.
  std::vector<Resources> pending_demand() const;

 private:
  // Tries to place `g` (its unplaced bundles); true if it is now created.
  bool try_place(PlacementGroup& g);
  // Takes (or gives back) `bundle` on `node`: reserved_ and that node's
  // `available` follow. Every change of a live group's nodes goes through here.
  void hold(const std::string& node, const Resources& bundle, bool take);
  void release_all(PlacementGroup& g);  // every bundle of g given back, its nodes cleared
  // `id` ended (removed or failed): the oldest ended group past kEndedKept is
  // forgotten, so a driver making a group per call (millions) leaves the head
  // no bigger, and no walk over the groups slower.
  void ended(std::int64_t id);

  // Kept as groups change, not recomputed per request (a walk over every
  // group's bundles and a copy of every node per placement: O(groups + pods)
  // per group, seconds for 1,000 groups on thousands of pods).
  std::vector<PlacementNode> nodes_;           // as given, `available` = total - reserved
  std::map<std::string, size_t> index_;        // node name -> index into nodes_
  std::map<std::string, Resources> reserved_;  // node -> what live groups hold there
  std::map<std::int64_t, PlacementGroup> groups_;
  std::deque<std::int64_t> ended_;  // ended groups still kept, the oldest first
  std::int64_t next_id_ = 1;
};

}  // namespace atl
