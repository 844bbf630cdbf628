// TaskCourse: the driver's tasks from their start to what is kept of them,
// in plain C++.
//
// It owns the TaskBook and who waits: each task's start (answered once it
// started, or failed when it ended first or did not start within
// kStartTimeout) and the task_wait long polls (answered at the task's end, or
// at their own deadline with the task as it is, or that the history dropped
// it). It reads a task's control line ("result <text>", bounded) and says
// when an ended task's streams leave /metrics and when the history dropped
// one (the sink forgets its files). Callers are ReplyIds; answers, timers and
// the sink's messages come back as data (TaskEffects, in order) for the shell
// to perform. Starting a task (which pod, which bundle) stays with the shell:
// it reads placement and the pods.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/core/task_status.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/refusal.hpp"
#include "atl/supervisor/reply_book.hpp"
#include "atl/supervisor/task_book.hpp"
#include "atl/supervisor/waiter_set.hpp"

namespace atl::supervisor {

namespace task {
// Answer a task's start or a task_wait with the task's status; a
// task_wait's deadline; a line.
using Answer = AnswerWith<TaskStatus>;
using supervisor::ArmWaitTimer;
using supervisor::Say;
// on_start_timer(task) after `after`.
struct ArmStartTimer {
  TaskId task = 0;
  Millis after{0};
};
// These tasks ended: their series leave /metrics (folded into the ended tasks').
struct Ended {
  std::vector<std::int32_t> tasks;
};
// The history dropped these ended tasks: the sink forgets their streams and files.
struct Forget {
  std::vector<std::int32_t> tasks;
};
}  // namespace task

using TaskEffect = std::variant<task::Answer, task::ArmStartTimer, task::ArmWaitTimer, task::Ended,
                                task::Forget, task::Say>;
using TaskEffects = std::vector<TaskEffect>;

// A task as task_wait and the C API see it.
TaskStatus task_status(const Task& t);

class TaskCourse {
 public:
  // How long a task may take to report its start.
  static constexpr Millis kStartTimeout = std::chrono::seconds(30);
  // A task's result travels in the supervisor's memory and in every answer
  // about it: a few MiB at most (bigger data belongs in shared storage).
  static constexpr std::size_t kMaxResultBytes = 8 << 20;

  explicit TaskCourse(std::size_t finished_kept = kDefaultFinishedKept) : book_(finished_kept) {}

  const TaskBook& book() const { return book_; }

  // A new task on `pod` (launched by the shell next), its start answered to
  // the caller kept as `reply`.
  const Task& start(std::int64_t group, std::int32_t bundle, const std::string& pod,
                    std::string command, ReplyId reply, TaskEffects& out);

  // What a task_wait on `id` with `timeout_ms` gets now, or nothing when it
  // waits (then await): an unknown or dropped task, a bad timeout, an ended
  // task or a timeout of 0 are answered at once.
  std::optional<task::Answer> answer_now(TaskId id, std::int64_t timeout_ms) const;
  void await(TaskId id, ReplyId reply, Millis timeout, TaskEffects& out);
  // Why `id` is not in the book: dropped from the history (failed), or never
  // started here (usage).
  Refusal not_held(TaskId id) const;

  // The task's pod reported: started (pid), ended, a control line.
  void on_started(TaskId id, std::int32_t pid, TaskEffects& out);
  void on_exit(TaskId id, std::int32_t code, std::int32_t signal, const std::string& error,
               TaskEffects& out);
  void on_note(TaskId id, const std::string& line, TaskEffects& out);
  // `pod` is gone: its tasks ended with it.
  void on_pod_lost(const std::string& pod, TaskEffects& out);

  void on_start_timer(TaskId id, TaskEffects& out);
  void on_wait_timer(WaiterId waiter, TaskEffects& out);

  // The job ended, or the supervisor is going down: every start and
  // task_wait still owed hear `why` (failed).
  void abandon(const std::string& why, TaskEffects& out);

  std::size_t owed() const { return starts_.size() + waiters_.size(); }

 private:
  void finish(TaskId id, std::int32_t code, std::int32_t signal, const std::string& note,
              TaskEffects& out);
  void answer_start(TaskId id, ReplyCode code, const std::string& text, TaskStatus status,
                    TaskEffects& out);

  TaskBook book_;
  std::map<TaskId, ReplyId> starts_;    // tasks whose start is not answered yet
  WaiterSet<TaskId, ReplyId> waiters_;  // task_wait long polls, by task
};

}  // namespace atl::supervisor
