// TaskRestarts: the detached tasks the head starts again when they end, as
// Ray's GCS restarts a detached actor with max_restarts whoever made it (its
// driver may be long gone; while it lives, its own watcher is not asked).
//
// A chain is one request and its restarts, known by its first task's id (the
// id its maker holds). Each end of its running task that was not asked for
// (a kill of any task of the chain ends it; so does one that fails to start
// again) starts the request again, at most `restarts` times (-1: without
// end), with ATL_TASK_RESTARTS=n (its how-manyth start again) in its
// environment. A task that dies young is started again later each time it
// does (at once, then after kFirstDelay, doubling to kMaxDelay): a
// constructor that always fails does not spin the pods; one that ran
// kStable starts the count over. Plain C++: ids, requests and the time given.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "atl/core/duration.hpp"
#include "atl/core/requests.hpp"
#include "atl/supervisor/liveness.hpp"
#include "atl/supervisor/task_book.hpp"

namespace atl::supervisor {

class TaskRestarts {
 public:
  using TimePoint = Liveness::TimePoint;
  static constexpr Millis kFirstDelay = std::chrono::milliseconds(500);
  static constexpr Millis kMaxDelay = std::chrono::seconds(30);
  static constexpr Millis kStable = std::chrono::seconds(10);

  // The chain of task `id`, started at `now` from `request` (its restarts
  // not 0, or its group its own: a chain of no restart, kept to give the
  // group back at its end).
  void keep(TaskId id, TaskRequest request, TimePoint now);

  // The task that runs now for `id` (any task of a chain, the first
  // included): 0 while its chain waits to start again; `id` itself for a
  // task of no chain.
  TaskId current(TaskId id) const;
  // A kill was asked of `id` or of its chain: it is not started again.
  // Nothing: `id` is in no chain. Else the placement group to remove now
  // (its own reservation, when it was waiting to start: no end will come).
  std::optional<std::int64_t> killed(TaskId id);

  // When a chain starts again: its first task's id, after `after`; or
  // (again false) that it does not (it was killed, or its restarts are
  // used: the chain is gone, and its own reservation, if any, is `release`).
  struct Due {
    TaskId chain = 0;
    Millis after{0};
    bool again = true;
    bool killed = false;
    std::int32_t used = 0;
    std::int32_t limit = 0;  // its restarts (-1: without end)
    std::int64_t release = 0;
  };
  // The running task `id` ended at `now`; nothing for a task in no chain.
  std::optional<Due> ended(TaskId id, TimePoint now);
  // What a chain that is due starts as (its env says the how-manyth); it
  // counts as one of its restarts. Nothing: killed meanwhile, or unknown.
  std::optional<TaskRequest> next(TaskId chain);
  // Its start again runs as task `id` (started at `now`).
  void started(TaskId chain, TaskId id, TimePoint now);
  // Its start again has to wait (its placement group is being placed again
  // after a pod's loss): due again, that start not counted. True the first
  // time in a row (the caller says so once).
  bool later(TaskId chain);
  // It could not start again: the chain ends; its own reservation to remove (0: none).
  std::int64_t failed(TaskId chain);

  // How many times the chain started again so far; -1 for no such chain.
  std::int32_t used(TaskId chain) const;
  std::size_t size() const { return chains_.size(); }

 private:
  struct Chain {
    TaskRequest request;  // as first given (its env without ATL_TASK_RESTARTS)
    std::int32_t used = 0;
    TaskId running = 0;    // 0: waiting to start again
    TimePoint since{};     // when the running (or last) task started
    Millis delay{0};       // before the next start again of a task that died young
    bool due = false;      // ended, its start again not taken yet (next)
    bool waiting = false;  // its start again waits for its group (later)
    bool killed = false;
  };
  const Chain* chain_of(TaskId id, TaskId* key = nullptr) const;
  static std::int64_t own_group(const Chain& c) {
    return c.request.own_group ? c.request.group : 0;
  }

  std::map<TaskId, Chain> chains_;    // by first task's id
  std::map<TaskId, TaskId> running_;  // a chain's running task -> its first task's id
};

}  // namespace atl::supervisor
