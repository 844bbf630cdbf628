#include "atl/supervisor/task_book.hpp"

#include <algorithm>
#include <utility>

namespace atl::supervisor {

TaskBook::TaskBook(std::size_t finished_kept) : tasks_(finished_kept) {}

Task& TaskBook::add(std::int64_t group, std::int32_t bundle, const std::string& pod,
                    std::string command) {
  Task t;
  t.id = next_++;
  t.group = group;
  t.bundle = group > 0 ? bundle : -1;
  t.command = std::move(command);
  t.record.pod = pod;
  live_by_pod_[pod].insert(t.id);
  if (group > 0) live_by_group_[group].insert(t.id);
  const TaskId id = t.id;
  return tasks_.add(id, std::move(t));
}

TaskFate TaskBook::fate(TaskId id) const { return tasks_.fate(id); }

const Task* TaskBook::find(TaskId id) const { return tasks_.find(id); }

Task* TaskBook::live(TaskId id) { return tasks_.live(id); }

bool TaskBook::mark_started(TaskId id, std::int32_t pid) {
  Task* t = live(id);
  if (!t) return false;
  t->record.started = true;
  t->record.pid = pid;
  return true;
}

const Task* TaskBook::finish(TaskId id, std::int32_t code, std::int32_t signal, std::string note) {
  Task* t = live(id);
  if (!t) return nullptr;
  if (auto p = live_by_pod_.find(t->record.pod); p != live_by_pod_.end()) {
    p->second.erase(id);
    if (p->second.empty()) live_by_pod_.erase(p);
  }
  if (auto g = live_by_group_.find(t->group); g != live_by_group_.end()) {
    g->second.erase(id);
    if (g->second.empty()) live_by_group_.erase(g);
  }
  t->record.done = true;
  t->record.code = code;
  t->record.signal = signal;
  t->record.note = std::move(note);
  // Ended tasks index nothing here; what the history drops leaves its streams.
  for (const auto& [old_id, old] : tasks_.finish(id)) dropped_.push_back(old_id);
  return tasks_.find(id);
}

std::vector<TaskId> TaskBook::take_dropped() {
  std::vector<TaskId> out;
  out.swap(dropped_);
  return out;
}

std::size_t TaskBook::running_on(const std::string& pod) const {
  auto it = live_by_pod_.find(pod);
  return it == live_by_pod_.end() ? 0 : it->second.size();
}

std::optional<std::string> TaskBook::least_loaded(
    const std::vector<std::string>& candidates) const {
  std::optional<std::string> best;
  std::size_t best_load = 0;
  for (const auto& pod : candidates) {
    std::size_t load = running_on(pod);
    if (!best || load < best_load) {
      best = pod;
      best_load = load;
    }
  }
  return best;
}

std::vector<TaskId> TaskBook::live_on(const std::string& pod) const {
  auto it = live_by_pod_.find(pod);
  if (it == live_by_pod_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<TaskId> TaskBook::live_in_group(std::int64_t group) const {
  std::vector<TaskId> out;
  if (group == 0) {
    for (const auto& [pod, ids] : live_by_pod_) out.insert(out.end(), ids.begin(), ids.end());
    std::sort(out.begin(), out.end());
    return out;
  }
  auto it = live_by_group_.find(group);
  if (it != live_by_group_.end()) out.assign(it->second.begin(), it->second.end());
  return out;
}

}  // namespace atl::supervisor
