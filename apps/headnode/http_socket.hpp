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

#include <cstdint>
#include <string>

#include "atl/core/expected.hpp"
#include "atl/os/growing_pool.hpp"
#include "atl/os/open_connections.hpp"
#include "connection_lobby.hpp"

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

// Binds `server` to host:port (0: any free port) with the wide backlog; its
// connections wait in the lobby (connection_lobby.hpp) until they speak. With
// `fallback` (a default port, not one the user gave) a taken port falls back
// to any free one, and *note says so in words about `what`.
inline Expected<std::uint16_t> bind_server(httplib::Server& server, const std::string& host,
                                           int port, bool fallback, const std::string& what,
                                           std::string* note) {
  int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0 && port != 0 && fallback) {
    bound = server.bind_to_any_port(host);
    if (bound > 0 && note)
      *note =
          "port " + std::to_string(port) + " is taken: " + what + " is on " + std::to_string(bound);
  }
  if (bound <= 0) {
    const std::string holder =
        port > 0 ? os::describe_port_holder(os::who_listens_on(static_cast<std::uint16_t>(port)))
                 : std::string();
    return make_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                      (holder.empty() ? "the address is not this machine's, or another user's "
                                        "process holds the port"
                                      : "taken by " + holder) +
                      ": pass another port (0: any free one)");
  }
  widen_backlog(server);
  hold_idle_connections(detail::ListeningSocket::of(server));
  return static_cast<std::uint16_t>(bound);
}

// The lobby of a bound server, closed with it (after its accept thread ended).
class LobbyOf {
 public:
  void bound(httplib::Server& server) { fd_ = detail::ListeningSocket::of(server); }
  // Before the server's stop(): its accept loop ends without waiting to see
  // the listener closed (a number another thread may reuse at once).
  void closing() { close_lobby(fd_); }
  ~LobbyOf() { release_idle_connections(fd_); }

 private:
  int fd_ = -1;
};

}  // namespace atl::headnode
