// cpp-httplib gives every accepted connection a thread of its pool, which
// then waits up to its read timeout for a request: 1,000 idle TCP connections
// held all 256 threads of the dashboard and a real request timed out. The
// head's executable therefore interposes accept() (libcpp-httplib's own call
// binds to it, as libssl's do to openssl_interpose.cpp): for a registered
// listening socket, accept() itself keeps the connections that have not
// spoken in one poll() on httplib's accept thread and returns the first that
// has. Every other accept() of the process (CAF's) is budgeted per source
// address (accept_within_budget) on its way to libc.
#include "connection_lobby.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/interposition.hpp"
#include "atl/core/pending_handshakes.hpp"

namespace atl::headnode {

namespace {

// Connections waiting for their first bytes, per server; each may wait
// kLobbyWait. The bookkeeping is PendingHandshakes': an HTTP request that has
// not begun is a handshake that has not begun.
constexpr std::size_t kLobbySize = 1024;
constexpr auto kLobbyWait = std::chrono::seconds(5);

using AcceptFn = int (*)(int, sockaddr*, socklen_t*);

struct Lobby {
  PendingHandshakes pending{kLobbySize, kLobbyWait};
  std::vector<int> waiting;  // in arrival order
  // Set (and the wake pipe written) before the server closes its socket:
  // the accept loop never relies on seeing its listener's number closed,
  // which another thread's new descriptor may take at once (it then polled
  // that one forever, and the head's exit waited on the server's thread).
  std::atomic<bool> closed{false};
  int wake[2] = {-1, -1};

  Lobby() {
    if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) wake[0] = wake[1] = -1;
  }
  ~Lobby() {
    for (int fd : wake)
      if (fd >= 0) ::close(fd);
  }

  void forget(int fd) {
    pending.finish(static_cast<PendingHandshakes::Key>(fd));
    waiting.erase(std::remove(waiting.begin(), waiting.end(), fd), waiting.end());
  }
  void drop(int fd) {
    forget(fd);
    ::close(fd);
  }
};

std::mutex g_mutex;
std::map<int, std::shared_ptr<Lobby>> g_lobbies;  // by listening socket

std::shared_ptr<Lobby> lobby_of(int fd) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_lobbies.find(fd);
  return it == g_lobbies.end() ? nullptr : it->second;
}

AcceptFn real_accept() {
  static auto real = reinterpret_cast<AcceptFn>(::dlsym(RTLD_NEXT, "accept"));
  if (!real) {
    std::fprintf(stderr, "atl: cannot find libc's accept: %s\n", ::dlerror());
    std::abort();
  }
  return real;
}

// Only the server's accept thread calls this for its socket.
int accept_from_lobby(Lobby& lobby, int listener, sockaddr* addr, socklen_t* len) {
  using Clock = PendingHandshakes::Clock;
  while (!lobby.closed) {
    auto now = Clock::now();
    for (auto fd : lobby.pending.take_expired(now)) lobby.drop(static_cast<int>(fd));
    std::vector<pollfd> fds;
    fds.push_back({listener, POLLIN, 0});
    fds.push_back({lobby.wake[0], POLLIN, 0});  // the server stops (-1: ignored by poll)
    for (int fd : lobby.waiting) fds.push_back({fd, POLLIN, 0});
    int wait_ms = 500;  // also how soon a closing server is noticed without its pipe
    if (auto next = lobby.pending.next_deadline()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count() + 1;
      wait_ms = static_cast<int>(std::clamp<long long>(left, 0, wait_ms));
    }
    int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (lobby.closed) break;
    // A waiting connection spoke (or hung up: the server sees that itself).
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      int fd = fds[i].fd;
      lobby.forget(fd);
      if (addr && len) ::getpeername(fd, addr, len);
      return fd;
    }
    if (fds[0].revents & POLLNVAL) {
      errno = EBADF;
      return -1;
    }
    if (fds[0].revents == 0) continue;
    int fd = real_accept()(listener, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EINTR)
        continue;
      return -1;  // shut down (the server stops), or out of descriptors: the server decides
    }
    auto admitted = lobby.pending.admit(static_cast<PendingHandshakes::Key>(fd), Clock::now());
    lobby.waiting.push_back(fd);
    if (admitted.evicted) lobby.drop(static_cast<int>(*admitted.evicted));
  }
  errno = EBADF;
  return -1;
}

}  // namespace

void hold_idle_connections(int listening_fd) {
  if (listening_fd < 0) return;
  // Never block in accept(): a connection reset between poll() and accept()
  // would hold the thread.
  ::fcntl(listening_fd, F_SETFL, ::fcntl(listening_fd, F_GETFL) | O_NONBLOCK);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_lobbies[listening_fd] = std::make_shared<Lobby>();
}

void close_lobby(int listening_fd) {
  if (auto lobby = lobby_of(listening_fd)) {
    lobby->closed = true;
    if (lobby->wake[1] >= 0) (void)!::write(lobby->wake[1], "x", 1);
  }
}

void release_idle_connections(int listening_fd) {
  std::shared_ptr<Lobby> lobby;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_lobbies.find(listening_fd);
    if (it == g_lobbies.end()) return;
    lobby = it->second;
    g_lobbies.erase(it);
  }
  // The accept thread has returned (the server joined it): nobody else holds these.
  for (int fd : lobby->waiting) ::close(fd);
  lobby->waiting.clear();
  lobby->closed = true;
}

}  // namespace atl::headnode

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  auto lobby = atl::headnode::lobby_of(fd);
  if (!lobby) return atl::accept_within_budget(fd, addr, len, atl::headnode::real_accept());
  return atl::headnode::accept_from_lobby(*lobby, fd, addr, len);
}

namespace {
// The check that the two callers' accept() reach this one (interposition.hpp).
const bool kAcceptChecked = [] {
  atl::register_interposition({"accept", "libcaf_io.so", "the per-address connection budget"});
  atl::register_interposition(
      {"accept", "libcpp-httplib.so", "the dashboard's idle connections held off its threads"});
  return true;
}();
}  // namespace
