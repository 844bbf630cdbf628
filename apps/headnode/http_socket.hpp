// cpp-httplib's default socket options set SO_REUSEPORT: a second server
// could then bind a port that is already serving, and the kernel would split
// the connections between the two. The head's servers take SO_REUSEADDR only
// (a restarted head rebinds at once), so a taken port is an error.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

namespace atl::headnode {

inline void use_port_exclusively(httplib::Server& server) {
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

}  // namespace atl::headnode
