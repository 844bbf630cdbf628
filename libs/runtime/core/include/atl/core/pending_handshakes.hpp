// PendingHandshakes: the TLS handshakes a server has accepted and not yet
// finished, each with a deadline, under a cap. Pure bookkeeping, no sockets.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace atl {

class PendingHandshakes {
 public:
  using Clock = std::chrono::steady_clock;
  using Key = std::uintptr_t;  // a session's identity (its SSL*)

  // At most `cap` handshakes wait at once (those not yet past their
  // deadline); each may take `deadline`.
  PendingHandshakes(std::size_t cap, std::chrono::milliseconds deadline);

  struct Admission {
    bool first_step = false;     // first seen: it waits from now
    std::optional<Key> evicted;  // at the cap: the oldest waiting one, to drop now
  };
  // A new handshake is always admitted: at the cap the oldest one that still
  // waits gives way (it is reported here once, as if its deadline had come).
  // So strangers that stall handshakes can fill the cap but never keep a
  // real client out: its handshake takes milliseconds, theirs are dropped
  // oldest first.
  Admission admit(Key key, Clock::time_point now);

  // The handshake ended (finished, failed or its session freed); whether it
  // was waiting.
  bool finish(Key key);

  // Handshakes whose deadline passed by `now`, each reported once (they stay
  // counted until finish(): the server has yet to drop them).
  std::vector<Key> take_expired(Clock::time_point now);

  // When the earliest not yet reported deadline falls; none while nothing waits.
  std::optional<Clock::time_point> next_deadline() const;

  std::size_t size() const { return started_.size(); }
  std::size_t cap() const { return cap_; }
  std::chrono::milliseconds deadline() const { return deadline_; }

 private:
  std::size_t cap_;
  std::chrono::milliseconds deadline_;
  std::unordered_map<Key, Clock::time_point> started_;  // every waiting one
  std::multimap<Clock::time_point, Key> due_;           // those not yet reported, by deadline
};

}  // namespace atl
