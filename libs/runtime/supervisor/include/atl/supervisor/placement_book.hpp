// PlacementBook: the driver's placement groups and who waits for them, in
// plain C++.
//
// The decisions are core's (PlacementGroups: validation, packing, the
// reservations); the book adds what the supervisor answered around them: the
// requests (create, wait, remove) with their JSON, the pg_wait long polls as
// ReplyIds (answered when their group is created, fails or goes, or at their
// own deadline), the groups' changes as lines, and what a removed group or the
// job's next attempt means for the tasks in it. Its answers, timers, lines
// and task stops come back as data (PlacementEffects, in order). The nodes it
// places on are the shell's view of the joined pods (with their taints and
// roles), asked for only when a group waits; the clock is an argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/core/placement.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/reply_book.hpp"
#include "atl/supervisor/waiter_set.hpp"

namespace atl::supervisor {

namespace placement {
// An answer (to a pg_wait, or the request's own), a pg_wait's deadline, a line.
using supervisor::Answer;
using supervisor::ArmWaitTimer;
using supervisor::Say;
// The tasks of `group` (0: every task) stop: their bundle, or the attempt, is gone.
struct StopTasks {
  std::int64_t group = 0;
  std::string why;
};
}  // namespace placement

using PlacementEffect =
    std::variant<placement::Answer, placement::ArmWaitTimer, placement::Say, placement::StopTasks>;
using PlacementEffects = std::vector<PlacementEffect>;

// The joined pods as placement sees them, made only when needed: when groups
// wait, or a group is created, and `version` differs from the one the book
// placed on last (a pod joined or left, a taint or the active pods changed).
// What each node has free the book keeps itself as groups come and go, so
// most groups are placed without the view made again (at 1,000 pods making
// it was most of a group's cost).
struct PlacementNodes {
  std::uint64_t version = 0;
  std::function<std::vector<PlacementNode>()> make;
};

class PlacementBook {
 public:
  const PlacementGroups& groups() const { return groups_; }

  // pg_create: a new group of `bundles_json` (a JSON list of objects), placed
  // now if it fits; its JSON, or a usage line naming what is wrong.
  placement::Answer create(const std::string& name, const std::string& strategy,
                           const std::string& bundles_json, std::int64_t timeout_ms,
                           const PlacementNodes& nodes, std::int64_t now_ms, PlacementEffects& out,
                           std::int64_t* made = nullptr);
  // pg_wait's answer now (unknown, created, failed or removed), or nothing
  // when it waits (then await).
  std::optional<placement::Answer> answer_now(std::int64_t id) const;
  void await(std::int64_t id, ReplyId reply, Millis timeout, PlacementEffects& out);
  void on_wait_timer(WaiterId waiter, PlacementEffects& out);
  // pg_remove: the group goes, its tasks stop, what it held may place others.
  placement::Answer remove(std::int64_t id, const PlacementNodes& nodes, std::int64_t now_ms,
                           PlacementEffects& out);

  // Nodes joined, left or (un)tainted, or the clock moved (deadlines): what
  // waits is placed (or fails); nothing waits: nothing is asked.
  void refresh(const PlacementNodes& nodes, std::int64_t now_ms, PlacementEffects& out);
  // `pod` is gone: its groups are rescheduled.
  void lose_node(const std::string& pod, const PlacementNodes& nodes, std::int64_t now_ms,
                 PlacementEffects& out);
  // A new attempt of user code, or the job's end: every task stops, every
  // group goes and its waiters hear `why`.
  void clear(const std::string& why, PlacementEffects& out);

  // cluster_state: the nodes with their totals, reservations and what is
  // free; the groups; the demand still waiting. `where(pod)` gives a node's
  // machine and address.
  std::string cluster_json(
      const std::vector<PlacementNode>& nodes,
      const std::function<std::pair<std::string, std::string>(const std::string&)>& where) const;

  std::size_t owed() const { return waiters_.size(); }

 private:
  void answer_waiters(std::int64_t group, PlacementEffects& out);
  void apply(const std::vector<GroupChange>& changes, PlacementEffects& out);
  // The groups placed on `nodes` (made again only for a new version).
  void use(const PlacementNodes& nodes);

  PlacementGroups groups_;
  std::optional<std::uint64_t> nodes_version_;  // of the view groups_ has
  WaiterSet<std::int64_t, ReplyId> waiters_;    // pg_wait long polls, by group
};

}  // namespace atl::supervisor
