#include "atl/core/rank_table.hpp"

#include <utility>

namespace atl {

void RankTable::uncount(const RankRecord& r) {
  if (r.started || r.done) --started_or_done_;
  if (r.done) --done_;
}

void RankTable::count_in(const RankRecord& r) {
  if (r.started || r.done) ++started_or_done_;
  if (r.done) ++done_;
}

void RankTable::add(std::int32_t stream, std::string pod, std::int32_t attempt) {
  RankRecord fresh;
  fresh.pod = std::move(pod);
  fresh.attempt = attempt;
  auto [it, inserted] = records_.try_emplace(stream);
  if (!inserted) uncount(it->second);
  it->second = std::move(fresh);
}

void RankTable::clear() {
  records_.clear();
  started_or_done_ = 0;
  done_ = 0;
}

void RankTable::mark_started(std::int32_t stream, std::int32_t pid) {
  auto it = records_.find(stream);
  if (it == records_.end()) return;
  uncount(it->second);
  it->second.started = true;
  it->second.pid = pid;
  count_in(it->second);
}

bool RankTable::mark_done(std::int32_t stream, std::int32_t code, std::int32_t signal,
                          std::string note) {
  auto it = records_.find(stream);
  if (it == records_.end() || it->second.done) return false;
  uncount(it->second);
  RankRecord& r = it->second;
  r.done = true;
  r.code = code;
  r.signal = signal;
  r.note = std::move(note);
  count_in(r);
  return true;
}

std::size_t RankTable::end_remaining(const std::string& note) {
  std::size_t ended = 0;
  for (auto& [stream, r] : records_) {
    if (r.done) continue;
    uncount(r);
    r.done = true;
    r.note = note;
    count_in(r);
    ++ended;
  }
  return ended;
}

}  // namespace atl
