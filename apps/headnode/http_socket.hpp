// cpp-httplib's default socket options set SO_REUSEPORT: a second server
// could then bind a port that is already serving, and the kernel would split
// the connections between the two. The head's servers take SO_REUSEADDR only
// (a restarted head rebinds at once), so a taken port is an error.
// httplib also listens with a backlog of 5: a burst of clients (a page's
// requests, a hundred log followers) would find connections refused, so the
// head listens again with the system's maximum once bound.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include "atl/os/growing_pool.hpp"

namespace atl::headnode {

inline void use_port_exclusively(httplib::Server& server) {
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

namespace detail {
// The listening socket is a protected member: reached the standard way, via
// a pointer to member named through a derived class.
struct ListeningSocket : httplib::Server {
  static socket_t of(httplib::Server& s) { return (s.*(&ListeningSocket::svr_sock_)).load(); }
};
}  // namespace detail

// httplib's own pool starts all its threads at once; this one starts them as
// connections need them (a head nobody browses keeps none).
class GrowingTaskQueue : public httplib::TaskQueue {
 public:
  explicit GrowingTaskQueue(std::size_t max_threads) : pool_(max_threads) {}
  void enqueue(std::function<void()> fn) override { pool_.enqueue(std::move(fn)); }
  void shutdown() override { pool_.shutdown(); }

 private:
  os::GrowingPool pool_;
};

// After bind_to_port / bind_to_any_port.
inline void widen_backlog(httplib::Server& server) {
  ::listen(detail::ListeningSocket::of(server), SOMAXCONN);
}

}  // namespace atl::headnode
