// WaiterSet: every long poll the supervisor holds (task_wait, pg_wait, ...)
// in one place. A waiter waits for something about a key (a task, a group)
// until it is answered or its own deadline passes; the shell arms the deadline
// timer with the waiter's id, so a late timer finds nothing and does nothing.
// Plain C++: `Reply` is whatever answers (a CAF promise in the supervisor, a
// recording stub in tests).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace atl::supervisor {

using WaiterId = std::uint64_t;

template <class Key, class Reply>
class WaiterSet {
 public:
  // A new waiter for `key`; its id is unique for the set's life (never reused).
  WaiterId add(Key key, Reply reply) {
    WaiterId id = next_++;
    by_key_.emplace(key, id);
    by_id_.emplace(id, Entry{std::move(key), std::move(reply)});
    return id;
  }

  // The deadline of `id` passed: its reply, once (nothing when it was answered).
  std::optional<std::pair<Key, Reply>> expire(WaiterId id) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return std::nullopt;
    std::pair<Key, Reply> out{std::move(it->second.key), std::move(it->second.reply)};
    erase_key_link(out.first, id);
    by_id_.erase(it);
    return out;
  }

  // What `key` was waited for happened: every waiter of it, oldest first.
  std::vector<Reply> take(const Key& key) {
    std::vector<Reply> out;
    auto [from, to] = by_key_.equal_range(key);
    for (auto it = from; it != to; ++it) {
      auto entry = by_id_.find(it->second);
      out.push_back(std::move(entry->second.reply));
      by_id_.erase(entry);
    }
    by_key_.erase(from, to);
    return out;
  }

  // The supervisor ends: every waiter, to be told why.
  std::vector<Reply> take_all() {
    std::vector<Reply> out;
    for (auto& [id, entry] : by_id_) out.push_back(std::move(entry.reply));
    by_id_.clear();
    by_key_.clear();
    return out;
  }

  // Every waiter with what it waits for, oldest first (each answered by it).
  std::vector<std::pair<Key, Reply>> take_all_with_keys() {
    std::vector<std::pair<Key, Reply>> out;
    for (auto& [id, entry] : by_id_) out.emplace_back(std::move(entry.key), std::move(entry.reply));
    by_id_.clear();
    by_key_.clear();
    return out;
  }

  std::size_t size() const { return by_id_.size(); }
  std::size_t waiting_for(const Key& key) const { return by_key_.count(key); }

 private:
  struct Entry {
    Key key;
    Reply reply;
  };
  void erase_key_link(const Key& key, WaiterId id) {
    auto [from, to] = by_key_.equal_range(key);
    for (auto it = from; it != to; ++it)
      if (it->second == id) {
        by_key_.erase(it);
        return;
      }
  }
  WaiterId next_ = 1;
  std::map<WaiterId, Entry> by_id_;      // ordered: oldest first
  std::multimap<Key, WaiterId> by_key_;  // equal keys in insertion order
};

}  // namespace atl::supervisor
