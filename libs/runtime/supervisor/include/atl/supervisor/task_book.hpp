// TaskBook: the driver's tasks (a command on a worker pod, in a placement
// group's bundle or not) from start to end, and what is kept of them after.
// Live tasks are indexed by pod and by group, so picking the least loaded pod
// or stopping a group's tasks costs those tasks, not every task ever started;
// finished tasks stay in a bounded history (oldest dropped first), so a
// driver that starts millions of tasks holds the newest few thousand records.
// Plain C++: no actors, no replies (the shell keeps who waits for what).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "atl/core/rank_table.hpp"
#include "atl/supervisor/bounded_history.hpp"

namespace atl::supervisor {

using TaskId = std::int32_t;

struct Task {
  TaskId id = 0;
  std::int64_t group = 0;  // 0: none
  std::int32_t bundle = -1;
  std::string command;
  RankRecord record;                  // its pod, pid, how it ended
  std::optional<std::string> result;  // the line it handed back ("result <text>")
  std::string result_error;           // why a result it sent was not kept
};

// What the book knows of an id: running (or starting), ended and kept, ended
// and dropped from the history, or never started by this supervisor.
using TaskFate = Fate;

class TaskBook {
 public:
  explicit TaskBook(std::size_t finished_kept = kDefaultFinishedKept);

  // A new task (starting) on `pod`; ids grow from 1.
  Task& add(std::int64_t group, std::int32_t bundle, const std::string& pod, std::string command);

  TaskFate fate(TaskId id) const;
  const Task* find(TaskId id) const;  // live or kept; null otherwise
  Task* live(TaskId id);              // live only (results, pids land there)

  bool mark_started(TaskId id, std::int32_t pid);
  // Ends a live task: moves it to the history and returns it (null when it
  // was not live: a second end, a late report of a dropped one).
  const Task* finish(TaskId id, std::int32_t code, std::int32_t signal, std::string note);
  // The ids of ended tasks the history dropped since the last call (their
  // streams are to be forgotten).
  std::vector<TaskId> take_dropped();

  // Of `candidates`, the pod running the fewest live tasks (the first on a tie).
  std::optional<std::string> least_loaded(const std::vector<std::string>& candidates) const;
  std::size_t running_on(const std::string& pod) const;
  std::vector<TaskId> live_on(const std::string& pod) const;
  std::vector<TaskId> live_in_group(std::int64_t group) const;  // 0: every live task

  std::size_t live_count() const { return tasks_.live_count(); }
  std::size_t kept_count() const { return tasks_.kept_count(); }
  std::size_t finished_kept() const { return tasks_.kept(); }
  TaskId last_id() const { return next_ - 1; }

 private:
  TaskId next_ = 1;
  BoundedHistory<TaskId, Task> tasks_;
  std::map<std::string, std::set<TaskId>> live_by_pod_;
  std::map<std::int64_t, std::set<TaskId>> live_by_group_;
  std::vector<TaskId> dropped_;
};

}  // namespace atl::supervisor
