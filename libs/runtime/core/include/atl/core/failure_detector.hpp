// FailureDetector: which peers have been silent too long. Pure: the caller
// feeds it heartbeats and the time (a steady clock in the actors, a fake one
// in tests) and asks which peers expired; each expiry is reported once.
//
// The rule, the same on both sides of a connection (the supervisor watching
// its nodes, a node watching its head): a peer last heard at T is lost at
// T + timeout. Anything heard from the peer counts, not only heartbeats.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/core/expected.hpp"

namespace atl {

struct HeartbeatOptions {
  Millis interval = std::chrono::milliseconds(500);  // how often each side sends one
  Millis timeout = std::chrono::seconds(3);          // silence after which a peer is lost
};

// The interval must be positive and the timeout at least two intervals (one
// late heartbeat must never be a loss); the message names the field.
Status validate_heartbeats(const HeartbeatOptions& options);

class FailureDetector {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  explicit FailureDetector(Millis timeout) : timeout_(timeout) {}

  // Starts (or restarts) watching `peer` as if heard from at `now`.
  void watch(const std::string& peer, TimePoint now) { last_heard_[peer] = now; }
  void forget(const std::string& peer) { last_heard_.erase(peer); }
  bool watching(const std::string& peer) const { return last_heard_.count(peer) > 0; }

  // `peer` spoke at `now`. Ignored for peers not watched (or already expired):
  // a late word from a peer declared lost does not bring it back.
  void heard(const std::string& peer, TimePoint now);

  // Peers silent for longer than the timeout at `now`, oldest silence first.
  // They are no longer watched: each is reported once.
  std::vector<std::string> expire(TimePoint now);

  // The watcher itself could not listen for `stall` (its timer came that
  // late: a busy mailbox, a paused process): every peer's silence shrinks by
  // it (never below zero), so the watcher's own stall is never taken for its
  // peers' silence.
  void excuse(Millis stall, TimePoint now);

  // How long `peer` has been silent, if watched.
  std::optional<Millis> silence(const std::string& peer, TimePoint now) const;

  // When the next peer would expire if nothing is heard (for a timer).
  std::optional<TimePoint> next_deadline() const;

  Millis timeout() const { return timeout_; }

 private:
  Millis timeout_;
  std::map<std::string, TimePoint> last_heard_;
};

}  // namespace atl
