// Whether a listener of this process still has a client: the TCP
// connections accepted on a port of this process that are still
// established. headnode ends without its actor system's teardown only when
// none is: a reply on its way to a client would be lost with the process.
#pragma once

#include <cstddef>
#include <cstdint>

#include "atl/core/expected.hpp"

namespace atl::os {

// This process's sockets (from /proc/self/fd) connected on local port
// `port` (IPv4 or IPv6) and established: a peer that closed its end
// (CLOSE_WAIT) is gone, the listener has no peer. Each socket is asked
// itself (getsockname, getpeername, TCP_INFO): /proc/net/tcp would walk the
// whole namespace's connection table, ~5 ms on this VM. An error when
// /proc/self/fd cannot be read (then the caller assumes clients).
Expected<std::size_t> clients_connected_on(std::uint16_t port);

}  // namespace atl::os
