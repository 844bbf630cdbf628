#include "atl/supervisor/task_course.hpp"

#include <string_view>

#include "atl/os/child_process.hpp"
#include "atl/supervisor/bounded_history.hpp"

namespace atl::supervisor {

namespace {

constexpr std::string_view kResultVerb = "result ";

// How a process ended, in words ("exit code 3", "killed by signal 9 (SIGKILL)").
std::string ended_how(std::int32_t code, std::int32_t signal) {
  return os::ExitStatus{code, signal}.describe();
}

}  // namespace

TaskStatus task_status(const Task& t) {
  const RankRecord& r = t.record;
  TaskStatus out;
  out.task = t.id;
  out.pod = r.pod;
  out.group = t.group;
  out.bundle = t.group > 0 ? t.bundle : -1;
  out.pid = r.pid;
  out.started = r.started;
  out.done = r.done;
  if (r.done) {
    out.exit_code = r.code;
    out.signal = r.signal;
    out.error = r.note;
    out.has_result = t.result.has_value();
    if (t.result) out.result = *t.result;
    out.result_error = t.result_error;
  }
  return out;
}

const Task& TaskCourse::start(std::int64_t group, std::int32_t bundle, const std::string& pod,
                              std::string command, ReplyId reply, TaskEffects& out) {
  Task& t = book_.add(group, bundle, pod, std::move(command));
  starts_[t.id] = reply;
  out.push_back(task::ArmStartTimer{t.id, kStartTimeout});
  return t;
}

Refusal TaskCourse::not_held(TaskId id) const {
  if (book_.fate(id) == TaskFate::dropped)
    return {ReplyCode::failed,
            dropped_record_line("task", id, book_.finished_kept(), "finished tasks")};
  return {ReplyCode::usage, "no task " + std::to_string(id)};
}

std::optional<task::Answer> TaskCourse::answer_now(TaskId id, std::int64_t timeout_ms) const {
  const Task* t = book_.find(id);
  if (!t) {
    Refusal why = not_held(id);
    return task::Answer{0, why.code, why.text, TaskStatus{}};
  }
  if (timeout_ms < 0)
    return task::Answer{0, ReplyCode::usage, "timeout must not be negative", TaskStatus{}};
  if (t->record.done || timeout_ms == 0) return task::Answer{0, ReplyCode::ok, "", task_status(*t)};
  return std::nullopt;
}

void TaskCourse::await(TaskId id, ReplyId reply, Millis timeout, TaskEffects& out) {
  const WaiterId waiter = waiters_.add(id, reply);
  out.push_back(task::ArmWaitTimer{waiter, timeout});
}

void TaskCourse::answer_start(TaskId id, ReplyCode code, const std::string& text, TaskStatus status,
                              TaskEffects& out) {
  auto it = starts_.find(id);
  if (it == starts_.end()) return;
  out.push_back(task::Answer{it->second, code, text, std::move(status)});
  starts_.erase(it);
}

void TaskCourse::on_started(TaskId id, std::int32_t pid, TaskEffects& out) {
  if (!book_.mark_started(id, pid)) return;
  answer_start(id, ReplyCode::ok, "", task_status(*book_.find(id)), out);
}

void TaskCourse::on_exit(TaskId id, std::int32_t code, std::int32_t signal,
                         const std::string& error, TaskEffects& out) {
  if (book_.fate(id) != TaskFate::live) return;
  out.push_back(task::Say{false, "task " + std::to_string(id) + " ended: " +
                                     (error.empty() ? ended_how(code, signal) : error)});
  finish(id, code, signal, error, out);
}

void TaskCourse::on_pod_lost(const std::string& pod, TaskEffects& out) {
  for (TaskId id : book_.live_on(pod)) finish(id, 255, 0, "pod " + pod + " was lost", out);
}

void TaskCourse::finish(TaskId id, std::int32_t code, std::int32_t signal, const std::string& note,
                        TaskEffects& out) {
  const Task* t = book_.finish(id, code, signal, note);
  if (!t) return;
  out.push_back(task::Ended{{static_cast<std::int32_t>(id)}});
  if (auto dropped = book_.take_dropped(); !dropped.empty()) {
    task::Forget forget;
    for (TaskId d : dropped) forget.tasks.push_back(static_cast<std::int32_t>(d));
    out.push_back(std::move(forget));
  }
  answer_start(id, ReplyCode::failed,
               "task " + std::to_string(id) +
                   " ended before it started: " + (note.empty() ? ended_how(code, signal) : note),
               TaskStatus{}, out);
  const TaskStatus status = task_status(*t);
  for (ReplyId reply : waiters_.take(id))
    out.push_back(task::Answer{reply, ReplyCode::ok, "", status});
}

void TaskCourse::on_note(TaskId id, const std::string& line, TaskEffects& out) {
  Task* t = book_.live(id);
  if (!t) return;
  if (line.rfind(kResultVerb, 0) != 0) {
    out.push_back(task::Say{true, "task " + std::to_string(id) + ": unknown control line ignored"});
    return;
  }
  const std::size_t bytes = line.size() - kResultVerb.size();
  if (bytes > kMaxResultBytes) {
    t->result_error = "its result of " + std::to_string(bytes) + " bytes is over the limit of " +
                      std::to_string(kMaxResultBytes) + " (pass big data through shared storage)";
    t->result.reset();
    out.push_back(task::Say{true, "task " + std::to_string(id) + ": " + t->result_error});
    return;
  }
  t->result = line.substr(kResultVerb.size());
}

void TaskCourse::on_start_timer(TaskId id, TaskEffects& out) {
  const Task* t = book_.find(id);
  if (!t || t->record.started || t->record.done) return;
  answer_start(
      id, ReplyCode::failed,
      "task " + std::to_string(id) + " did not start within " + format_duration(kStartTimeout),
      TaskStatus{}, out);
}

void TaskCourse::on_wait_timer(WaiterId waiter, TaskEffects& out) {
  auto expired = waiters_.expire(waiter);
  if (!expired) return;  // answered meanwhile
  const auto& [id, reply] = *expired;
  if (const Task* t = book_.find(id)) {
    out.push_back(task::Answer{reply, ReplyCode::ok, "", task_status(*t)});
  } else {  // ended and dropped from the history while this poll waited
    Refusal why = not_held(id);
    out.push_back(task::Answer{reply, why.code, why.text, TaskStatus{}});
  }
}

void TaskCourse::abandon(const std::string& why, TaskEffects& out) {
  for (const auto& [id, reply] : starts_)
    out.push_back(task::Answer{reply, ReplyCode::failed, why, TaskStatus{}});
  starts_.clear();
  for (ReplyId reply : waiters_.take_all())
    out.push_back(task::Answer{reply, ReplyCode::failed, why, TaskStatus{}});
}

}  // namespace atl::supervisor
