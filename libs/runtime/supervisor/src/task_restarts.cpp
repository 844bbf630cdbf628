#include "atl/supervisor/task_restarts.hpp"

#include <algorithm>
#include <utility>

namespace atl::supervisor {

void TaskRestarts::keep(TaskId id, TaskRequest request, TimePoint now) {
  Chain c;
  c.request = std::move(request);
  c.running = id;
  c.since = now;
  chains_[id] = std::move(c);
  running_[id] = id;
}

const TaskRestarts::Chain* TaskRestarts::chain_of(TaskId id, TaskId* key) const {
  TaskId first = id;
  if (auto r = running_.find(id); r != running_.end()) first = r->second;
  auto it = chains_.find(first);
  if (it == chains_.end()) return nullptr;
  if (key) *key = first;
  return &it->second;
}

TaskId TaskRestarts::current(TaskId id) const {
  const Chain* c = chain_of(id);
  return c ? c->running : id;
}

std::optional<std::int64_t> TaskRestarts::killed(TaskId id) {
  TaskId key = 0;
  if (!chain_of(id, &key)) return std::nullopt;
  Chain& c = chains_[key];
  c.killed = true;
  if (c.running != 0) return std::int64_t{0};  // its end comes, and says the rest
  const std::int64_t release = own_group(c);
  chains_.erase(key);  // nothing runs: nothing left to end
  return release;
}

std::int64_t TaskRestarts::failed(TaskId chain) {
  auto it = chains_.find(chain);
  if (it == chains_.end()) return 0;
  const std::int64_t release = own_group(it->second);
  chains_.erase(it);
  return release;
}

std::optional<TaskRestarts::Due> TaskRestarts::ended(TaskId id, TimePoint now) {
  auto r = running_.find(id);
  if (r == running_.end()) return std::nullopt;
  const TaskId key = r->second;
  running_.erase(r);
  auto it = chains_.find(key);
  if (it == chains_.end()) return std::nullopt;
  Chain& c = it->second;
  c.running = 0;
  const std::int32_t limit = c.request.restarts;
  if (c.killed || (limit >= 0 && c.used >= limit)) {
    const Due last{key, Millis{0}, false, c.killed, c.used, limit, own_group(c)};
    chains_.erase(it);
    return last;
  }
  c.due = true;
  if (now - c.since >= kStable) c.delay = Millis{0};  // it ran a while: the count starts over
  const Millis after = c.delay;
  c.delay = c.delay == Millis{0} ? kFirstDelay : std::min(c.delay * 2, kMaxDelay);
  return Due{key, after, true, false, c.used, limit, 0};
}

std::optional<TaskRequest> TaskRestarts::next(TaskId chain) {
  auto it = chains_.find(chain);
  if (it == chains_.end() || !it->second.due) return std::nullopt;
  Chain& c = it->second;
  c.due = false;
  if (c.killed) {
    chains_.erase(it);
    return std::nullopt;
  }
  ++c.used;
  TaskRequest again = c.request;
  again.env.push_back("ATL_TASK_RESTARTS=" + std::to_string(c.used));
  return again;
}

void TaskRestarts::started(TaskId chain, TaskId id, TimePoint now) {
  auto it = chains_.find(chain);
  if (it == chains_.end()) return;
  it->second.running = id;
  it->second.since = now;
  it->second.waiting = false;
  running_[id] = chain;
}

bool TaskRestarts::later(TaskId chain) {
  auto it = chains_.find(chain);
  if (it == chains_.end() || it->second.running != 0) return false;
  Chain& c = it->second;
  c.due = true;
  if (c.used > 0) --c.used;  // next() counted it
  const bool first = !c.waiting;
  c.waiting = true;
  return first;
}

std::int32_t TaskRestarts::used(TaskId chain) const {
  auto it = chains_.find(chain);
  return it == chains_.end() ? -1 : it->second.used;
}

}  // namespace atl::supervisor
