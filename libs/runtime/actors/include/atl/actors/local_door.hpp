// LocalDoor: the head's local door (os/local_door.hpp) served. Each request
// that comes through it is sent to the supervisor as the request a remote
// atlctl would send, and its reply (whatever it is) goes back serialized as
// CAF serializes it: the door knows no command, so every atlctl command works
// through it unchanged. One thread accepts; one thread per connection (at
// most kMaxConnections: past that a newcomer is closed at once and its atlctl
// goes over TCP).
//
// A connection's first frame is its hello: kDoorHello and the CA certificate
// (PEM) of the credentials atlctl would use over TCP. The door admits it only
// when that is the job's CA (nothing, with an --insecure head): atlctl with
// another job's credentials or --insecure is refused here as TLS refuses it
// there, and falls back to TCP to be refused the same way.
#pragma once

#include <caf/fwd.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "atl/core/expected.hpp"

namespace atl {

class LocalDoor {
 public:
  static constexpr int kMaxConnections = 32;

  // Opens the door of the head listening on bind:port; an error (another
  // door there, no such address) leaves atlctl on TCP only.
  static Expected<std::unique_ptr<LocalDoor>> open(caf::actor_system& sys,
                                                   const caf::actor& supervisor,
                                                   const std::string& bind, std::uint16_t port,
                                                   std::string job_ca_pem);
  // Closes the door: requests in flight fail at once, every thread is joined.
  ~LocalDoor();

  LocalDoor(const LocalDoor&) = delete;
  LocalDoor& operator=(const LocalDoor&) = delete;

  struct State;

 private:
  explicit LocalDoor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace atl
