// BoundedHistory: records that are live until they end, then kept in a
// history of at most `kept` ended ones (the oldest end dropped first). What
// the supervisor keeps of tasks and debug runs: a driver that starts millions
// of tasks, or an operator who runs thousands of commands, costs the head
// the newest few thousand records, and an id asked for later is known to
// have been dropped, not mistaken for one that never was. Ids are handed out
// one after the other (each the last + 1), so every id between the first and
// the last that is not held was dropped.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace atl::supervisor {

inline constexpr std::size_t kDefaultFinishedKept = 10000;
// Ended debug runs are bounded by their rank records too (a run of 32,000
// ranks weighs 32,000): 10,000 of them would be ~73 GB of logs and records.
inline constexpr std::size_t kDefaultRankRecordsKept = 20000;

// What a history knows of an id.
enum class Fate { live, finished, dropped, unknown };

// What a caller asking after a dropped record hears: "run 7 ended and its
// record was dropped (the supervisor keeps the newest 10000 ended runs)".
inline std::string dropped_record_line(const std::string& what, long long id, std::size_t kept,
                                       const std::string& kept_what) {
  return what + " " + std::to_string(id) +
         " ended and its record was dropped (the supervisor keeps the newest " +
         std::to_string(kept) + " " + kept_what + ")";
}

template <class Id, class Record>
class BoundedHistory {
 public:
  // At most `kept` ended records, and at most `max_weight` of their weights
  // together (the one just ended is kept whatever it weighs).
  explicit BoundedHistory(std::size_t kept = kDefaultFinishedKept,
                          std::size_t max_weight = static_cast<std::size_t>(-1))
      : kept_(kept), max_weight_(max_weight) {}

  // A new live record: `id` the last one's + 1.
  Record& add(Id id, Record record) {
    if (!any_) first_id_ = id;
    if (!any_ || id > max_id_) max_id_ = id;
    any_ = true;
    return live_.insert_or_assign(id, std::move(record)).first->second;
  }

  Fate fate(Id id) const {
    if (live_.count(id)) return Fate::live;
    if (finished_.count(id)) return Fate::finished;
    if (any_ && id >= first_id_ && id <= max_id_) return Fate::dropped;
    return Fate::unknown;
  }
  Record* find(Id id) {
    if (auto it = live_.find(id); it != live_.end()) return &it->second;
    if (auto it = finished_.find(id); it != finished_.end()) return &it->second;
    return nullptr;
  }
  const Record* find(Id id) const { return const_cast<BoundedHistory*>(this)->find(id); }
  Record* live(Id id) {
    auto it = live_.find(id);
    return it == live_.end() ? nullptr : &it->second;
  }

  // Ends a live record: it joins the history (the one just ended is kept even
  // with a history of 0: its callers read it now). Returns the records
  // dropped to make room, oldest first (their indexes go with them); nothing
  // when `id` was not live.
  // `weight`: what the record counts against max_weight (a run's ranks).
  std::vector<std::pair<Id, Record>> finish(Id id, std::size_t weight = 1) {
    std::vector<std::pair<Id, Record>> dropped;
    auto it = live_.find(id);
    if (it == live_.end()) return dropped;
    finished_.insert_or_assign(id, std::move(it->second));
    live_.erase(it);
    order_.emplace_back(id, weight);
    weight_ += weight;
    while (order_.size() > 1 &&
           (order_.size() > std::max<std::size_t>(kept_, 1) || weight_ > max_weight_)) {
      const auto [old_id, old_weight] = order_.front();
      order_.pop_front();
      weight_ -= old_weight;
      auto old = finished_.find(old_id);
      if (old == finished_.end()) continue;
      dropped.emplace_back(old->first, std::move(old->second));
      finished_.erase(old);
    }
    return dropped;
  }

  // Every record held, live or kept, in id order.
  template <class F>
  void for_each(F&& f) const {
    auto l = live_.begin();
    auto k = finished_.begin();
    while (l != live_.end() || k != finished_.end()) {
      if (k == finished_.end() || (l != live_.end() && l->first < k->first)) {
        f(l->first, l->second);
        ++l;
      } else {
        f(k->first, k->second);
        ++k;
      }
    }
  }
  template <class F>
  void for_each_live(F&& f) {
    for (auto& [id, r] : live_) f(id, r);
  }

  std::size_t live_count() const { return live_.size(); }
  std::size_t kept_count() const { return finished_.size(); }
  std::size_t kept() const { return kept_; }
  std::size_t kept_weight() const { return weight_; }

 private:
  std::size_t kept_;
  std::size_t max_weight_;
  std::size_t weight_ = 0;  // of the ended records held
  std::map<Id, Record> live_;
  std::map<Id, Record> finished_;
  std::deque<std::pair<Id, std::size_t>> order_;  // ended (with weights), oldest end first
  bool any_ = false;
  Id first_id_{};
  Id max_id_{};
};

}  // namespace atl::supervisor
