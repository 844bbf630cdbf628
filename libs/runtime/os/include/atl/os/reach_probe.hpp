// The pre-flight's network check: each worker listens on the address its
// ranks will use, and its successor in a ring connects to it over TCP (N
// connections for N workers, not N^2).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "atl/core/expected.hpp"

namespace atl::os {

// A bound socket, closed with the object (moved, never copied), and its port.
class BoundSocket {
 public:
  BoundSocket() = default;
  BoundSocket(int fd, std::uint16_t port) : fd_(fd), port_(port) {}
  BoundSocket(BoundSocket&& other) noexcept { *this = std::move(other); }
  BoundSocket& operator=(BoundSocket&& other) noexcept;
  BoundSocket(const BoundSocket&) = delete;
  BoundSocket& operator=(const BoundSocket&) = delete;
  ~BoundSocket();

  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// A listening TCP socket on `address` (`port`, 0: any free one); closed with
// the object. No accept is needed: the kernel completes a peer's connect by
// itself. Also how a port is found free before a child is told to take it.
class ProbeListener {
 public:
  static Expected<ProbeListener> open(const std::string& address, std::uint16_t port = 0);
  std::uint16_t port() const { return socket_.port(); }

 private:
  explicit ProbeListener(BoundSocket socket) : socket_(std::move(socket)) {}
  BoundSocket socket_;
};

// A pod's pre-flight probe (its node agent's), one listener at a time: each
// open() replaces the one before and has a number of its own, which the
// timer that ends it names. A freed port comes back in a later round (the
// kernel hands it out again), so an earlier round's timer must never close
// a later round's listener found by its port: at 1,000 simulated pods the
// first round's timer, firing as a restart's round began, closed a new
// listener on the same port and the ring failed with "Connection refused".
class ProbeSlot {
 public:
  struct Opened {
    std::uint64_t id = 0;
    std::uint16_t port = 0;
  };
  // Listens on `address` (`port` 0: any free one); the one before is closed.
  Expected<Opened> open(const std::string& address, std::uint16_t port = 0);
  // Open `id`'s time is over: closed if it is still the one open.
  void expire(std::uint64_t id);
  void close() { listener_.reset(); }  // the pre-flight is over
  bool is_open() const { return listener_.has_value(); }

 private:
  std::optional<ProbeListener> listener_;
  std::uint64_t last_ = 0;
};

// A port held for a listener that opens a little later (the head's, while
// its local pods start and are told its address): a socket bound with
// SO_REUSEADDR and not listening. The listener, SO_REUSEADDR too (CAF's
// publish with reuse), binds the same port beside it: Linux allows that
// while neither listens. Meanwhile the kernel gives the port to no one
// else's bind to port 0. Connects to it are refused until the listener opens.
class PortReservation {
 public:
  static Expected<PortReservation> make(const std::string& address);
  std::uint16_t port() const { return socket_.port(); }

 private:
  explicit PortReservation(BoundSocket socket) : socket_(std::move(socket)) {}
  BoundSocket socket_;
};

// Connects to host:port within `timeout`; the error says what failed.
Status probe_connect(const std::string& host, std::uint16_t port,
                     std::chrono::milliseconds timeout);

}  // namespace atl::os
