// LocalDoor: a local door (os/local_door.hpp) served: the head's own, or a
// workernode's relay to its head over the workernode's connection. Each request
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
#include <memory>
#include <string>

#include "atl/core/expected.hpp"

namespace atl {

// A message as the door carries it (CAF's binary serialization), both ways:
// atlctl's requests and the supervisor's replies.
Expected<std::string> door_message_bytes(caf::actor_system& sys, const caf::message& msg);
Expected<caf::message> door_message(caf::actor_system& sys, const std::string& bytes);

class LocalDoor {
 public:
  static constexpr int kMaxConnections = 32;

  // Serves `listener` (os::listen_door, the head's own, or
  // os::listen_relay_door, a workernode's relay; owned from here on) for the
  // supervisor behind `supervisor`, admitting callers with the job's CA.
  static Expected<std::unique_ptr<LocalDoor>> serve(caf::actor_system& sys,
                                                    const caf::actor& supervisor, int listener,
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
