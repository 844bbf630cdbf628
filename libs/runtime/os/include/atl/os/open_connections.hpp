// Whether a listener of this process still has a client: the TCP
// connections accepted on a port of this process that are still
// established. headnode ends without its actor system's teardown only when
// none is: a reply on its way to a client would be lost with the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

// This process's sockets (from /proc/self/fd) connected on local port
// `port` (IPv4 or IPv6) and established: a peer that closed its end
// (CLOSE_WAIT) is gone, the listener has no peer. Each socket is asked
// itself (getsockname, getpeername, TCP_INFO): /proc/net/tcp would walk the
// whole namespace's connection table, ~5 ms on this VM. An error when
// /proc/self/fd cannot be read (then the caller assumes clients).
Expected<std::size_t> clients_connected_on(std::uint16_t port);

// The socket inodes listening on TCP `port` in a /proc/net/tcp or tcp6 text
// (state 0A), any local address.
std::vector<std::uint64_t> listening_inodes(const std::string& proc_net_tcp, std::uint16_t port);

// Who holds a listening TCP socket on `port` in this network namespace: a
// process's pid, its name, and the atl job it runs for (its ATL_JOB_ID; ""
// when it has none). nullopt when none is found (nobody listens, or the
// holder is not this user's to look at). For a refusal that names what took
// a port ("taken by job jo-b's Ray (gcs_server, pid 4242)").
struct PortHolder {
  int pid = 0;
  std::string name;
  std::string job_id;
};
std::optional<PortHolder> who_listens_on(std::uint16_t port);

// "job jo-b's gcs_server (pid 4242)", "gcs_server (pid 4242)", or "" for none.
std::string describe_port_holder(const std::optional<PortHolder>& holder);

}  // namespace atl::os
