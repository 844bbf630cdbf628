#include "atl/supervisor/task_book.hpp"

#include <utility>

namespace atl::supervisor {

TaskBook::TaskBook(std::size_t finished_kept) : finished_kept_(finished_kept) {}

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
  return live_.emplace(t.id, std::move(t)).first->second;
}

TaskFate TaskBook::fate(TaskId id) const {
  if (live_.count(id)) return TaskFate::live;
  if (finished_.count(id)) return TaskFate::finished;
  if (id >= 1 && id < next_) return TaskFate::dropped;
  return TaskFate::unknown;
}

const Task* TaskBook::find(TaskId id) const {
  if (auto it = live_.find(id); it != live_.end()) return &it->second;
  if (auto it = finished_.find(id); it != finished_.end()) return &it->second;
  return nullptr;
}

Task* TaskBook::live(TaskId id) {
  auto it = live_.find(id);
  return it == live_.end() ? nullptr : &it->second;
}

bool TaskBook::mark_started(TaskId id, std::int32_t pid) {
  Task* t = live(id);
  if (!t) return false;
  t->record.started = true;
  t->record.pid = pid;
  return true;
}

const Task* TaskBook::finish(TaskId id, std::int32_t code, std::int32_t signal, std::string note) {
  auto it = live_.find(id);
  if (it == live_.end()) return nullptr;
  Task t = std::move(it->second);
  live_.erase(it);
  if (auto p = live_by_pod_.find(t.record.pod); p != live_by_pod_.end()) {
    p->second.erase(id);
    if (p->second.empty()) live_by_pod_.erase(p);
  }
  if (auto g = live_by_group_.find(t.group); g != live_by_group_.end()) {
    g->second.erase(id);
    if (g->second.empty()) live_by_group_.erase(g);
  }
  t.record.done = true;
  t.record.code = code;
  t.record.signal = signal;
  t.record.note = std::move(note);
  finished_order_.push_back(id);
  const Task& kept = finished_.emplace(id, std::move(t)).first->second;
  // The one just ended stays even with a history of 0: its callers read it now.
  while (finished_order_.size() > std::max<std::size_t>(finished_kept_, 1)) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
  return &kept;
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
    for (const auto& [id, t] : live_) out.push_back(id);
    return out;
  }
  auto it = live_by_group_.find(group);
  if (it != live_by_group_.end()) out.assign(it->second.begin(), it->second.end());
  return out;
}

}  // namespace atl::supervisor
