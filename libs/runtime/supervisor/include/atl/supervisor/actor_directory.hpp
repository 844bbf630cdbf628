// ActorDirectory: the job's named actors. Any process of the job may host an
// actor under a name; callers reach it by name through the supervisor, which
// keeps each call's reply until the host answers, the call times out, or the
// host goes (then every pending call is answered at once, so no caller waits
// past its timeout for a reply that cannot come). It decides which names are
// good and taken, counts calls, and hands back the pending replies of a host
// that left; whether a host still answers (one ping at a time) is kept here too.
//
// Plain C++: `Handle` is the host (a caf::actor in the supervisor, an int in
// the tests) and `Reply` what a caller waits on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "atl/core/quote.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/supervisor/refusal.hpp"

namespace atl::supervisor {

using CallId = std::int64_t;

// 1 to 128 printable ASCII characters, no spaces.
inline bool valid_actor_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (unsigned char c : name)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

template <class Handle, class Reply>
class ActorDirectory {
 public:
  struct Entry {
    Handle handle;
    std::string owner;  // who hosts it, for people
    std::int64_t calls = 0;
    std::map<CallId, Reply> pending;  // calls forwarded, not answered yet
    bool pinging = false;             // a liveness ping is out
  };

  // `name` hosted by `handle` (of `owner`). `closed`: the job ended, why.
  std::optional<Refusal> add(const std::string& name, Handle handle, bool has_handle,
                             const std::string& owner,
                             const std::optional<std::string>& closed = std::nullopt) {
    if (!valid_actor_name(name))
      return Refusal{ReplyCode::usage, "bad actor name " + quote(name) +
                                           " (1 to 128 printable characters, no spaces)"};
    if (!has_handle) return Refusal{ReplyCode::usage, "no actor given for " + quote(name)};
    if (closed) return Refusal{ReplyCode::refused, *closed};
    if (auto it = entries_.find(name); it != entries_.end())
      return Refusal{
          ReplyCode::refused,
          "an actor named " + quote(name) + " exists already (hosted by " + it->second.owner + ")"};
    entries_.emplace(name, Entry{std::move(handle), owner, 0, {}, false});
    return std::nullopt;
  }

  // The entry of `name` leaves: its host and the replies still owed.
  std::variant<Entry, Refusal> remove(const std::string& name) {
    auto it = entries_.find(name);
    if (it == entries_.end()) return Refusal{ReplyCode::usage, "no actor named " + quote(name)};
    Entry e = std::move(it->second);
    entries_.erase(it);
    return e;
  }

  // A call of `name`: its id (the host is asked by the shell), or why not.
  // `make_reply()` makes what the caller waits on, only once the call is
  // taken (a CAF response promise made for a refused call would leave the
  // caller waiting for an answer never sent).
  template <class MakeReply>
  std::variant<CallId, Refusal> call(const std::string& name, std::int64_t timeout_ms,
                                     MakeReply&& make_reply) {
    auto it = entries_.find(name);
    if (it == entries_.end()) return Refusal{ReplyCode::usage, "no actor named " + quote(name)};
    if (timeout_ms <= 0) return Refusal{ReplyCode::usage, "a call needs a timeout above 0"};
    const CallId id = next_call_++;
    it->second.pending.emplace(id, make_reply());
    ++it->second.calls;
    return id;
  }
  // Call `id` of `name` is answered (or timed out): its reply, once; none
  // when the actor went meanwhile (its callers were answered then).
  std::optional<Reply> answered(const std::string& name, CallId id) {
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    auto p = it->second.pending.find(id);
    if (p == it->second.pending.end()) return std::nullopt;
    Reply r = std::move(p->second);
    it->second.pending.erase(p);
    return r;
  }

  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, Entry>& entries() const { return entries_; }

  // The hosts to ping now (not already pinged), each marked as pinged.
  std::vector<std::pair<std::string, Handle>> to_ping() {
    std::vector<std::pair<std::string, Handle>> out;
    for (auto& [name, e] : entries_) {
      if (e.pinging) continue;
      e.pinging = true;
      out.emplace_back(name, e.handle);
    }
    return out;
  }
  // `name`'s host `handle` answered its ping (ignored if replaced meanwhile).
  void pong(const std::string& name, const Handle& handle) {
    auto it = entries_.find(name);
    if (it != entries_.end() && it->second.handle == handle) it->second.pinging = false;
  }
  // `name`'s host `handle` is dead: its entry, unless it was replaced or removed.
  std::optional<Entry> drop_if(const std::string& name, const Handle& handle) {
    auto it = entries_.find(name);
    if (it == entries_.end() || !(it->second.handle == handle)) return std::nullopt;
    Entry e = std::move(it->second);
    entries_.erase(it);
    return e;
  }
  // The entry whose host `is_it(handle)` (a down message): its name and entry.
  template <class Pred>
  std::optional<std::pair<std::string, Entry>> drop_where(Pred is_it) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (!is_it(it->second.handle)) continue;
      std::pair<std::string, Entry> out{it->first, std::move(it->second)};
      entries_.erase(it);
      return out;
    }
    return std::nullopt;
  }
  // Every pending reply, taken (the job ends).
  std::vector<Reply> take_all_pending() {
    std::vector<Reply> out;
    for (auto& [name, e] : entries_) {
      for (auto& [id, r] : e.pending) out.push_back(std::move(r));
      e.pending.clear();
    }
    return out;
  }

 private:
  std::map<std::string, Entry> entries_;
  CallId next_call_ = 1;
};

}  // namespace atl::supervisor
