// A local pod's line to its head: BASP over the Unix socket pair its start
// gate was (os/start_gate.hpp), instead of TCP and TLS.
//
// `headnode --local-workers` forks its first pods itself; each is born with
// one end of a socket pair of its own, the head keeps the other. Nobody else
// can reach such a pair (no address, no path: it exists only as the two
// descriptors it was made with), so it needs no TLS: the two handshakes of a
// 2x2 job's pods, their SSL contexts and their records' encryption are gone
// (bench/results/launch.md). CAF's BASP broker takes a connection it did not
// open itself as its tests do: the head's end published with the supervisor
// (the server's side of the handshake), the pod's end connected (the
// client's). The connection is then CAF's, as a TCP one is: heartbeats,
// timeouts, down messages alike. A pod that loses it (a frozen head) rejoins
// over TCP and TLS, as every pod does.
#pragma once

#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <chrono>
#include <cstdint>

namespace atl {

// The head: serves `fd` (its end of a pod's line, now CAF's) as a connection
// accepted on `port`, where `supervisor` is published: the pod's handshake
// finds the supervisor there. Returns at once.
void serve_pod_line(caf::actor_system& sys, const caf::actor& supervisor, int fd,
                    std::uint16_t port);

// The pod: the head's supervisor over `fd` (its end of the line, now CAF's),
// published on `port`. `shutter`: a descriptor of the same socket, the
// caller's, to end the line by (shutdown: CAF then sees it close, as the
// head does); -1 when it failed. A failure (no answer within `patience`)
// ends the line: the pod goes over TCP instead.
struct PodLine {
  caf::expected<caf::actor> supervisor{caf::error{}};
  int shutter = -1;
};
PodLine connect_pod_line(caf::actor_system& sys, int fd, std::uint16_t port,
                         std::chrono::milliseconds patience);

// Ends a line by its shutter (and closes it); nothing for -1.
void end_pod_line(int& shutter);

}  // namespace atl
