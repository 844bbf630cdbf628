// HandleMap: the shell's side of "pieces hold plain ids, never actors". Each
// peer the Supervisor knows by an id (an agent, a named actor's host, a
// driver's connection, an executor owed an answer) is kept here under a
// fresh id until it is let go; the shell finds the handle to send to, or the
// ids an actor that went down stood for.
//
// Plain C++: `Handle` is a caf::actor in the supervisor (compared with ==,
// its address the key `address_of` gives), anything in tests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace atl::supervisor {

template <class Id, class Handle>
class HandleMap {
 public:
  // Keeps `handle` under an id never used before in this map.
  Id add(Handle handle) {
    const Id id{++last_};
    map_.emplace(id, std::move(handle));
    return id;
  }

  // The id `handle` is kept under, or a new one for it (one id per handle).
  Id id_of(const Handle& handle) {
    if (auto id = find_id(handle)) return *id;
    return add(handle);
  }

  const Handle* find(Id id) const {
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : &it->second;
  }

  std::optional<Id> find_id(const Handle& handle) const {
    for (const auto& [id, h] : map_)
      if (h == handle) return id;
    return std::nullopt;
  }

  bool holds(const Handle& handle) const { return find_id(handle).has_value(); }

  // The handle of `id`, let go (a default Handle when there is none).
  Handle take(Id id) {
    auto it = map_.find(id);
    if (it == map_.end()) return Handle{};
    Handle out = std::move(it->second);
    map_.erase(it);
    return out;
  }

  // Every id whose handle `matches` (an actor's address: all it stood for), let go.
  template <class Match>
  std::vector<Id> take_all(Match matches) {
    std::vector<Id> out;
    for (auto it = map_.begin(); it != map_.end();) {
      if (matches(it->second)) {
        out.push_back(it->first);
        it = map_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  const std::map<Id, Handle>& all() const { return map_; }
  std::size_t size() const { return map_.size(); }

 private:
  std::map<Id, Handle> map_;
  std::int64_t last_ = 0;
};

}  // namespace atl::supervisor
