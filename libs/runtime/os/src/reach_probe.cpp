#include "atl/os/reach_probe.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace atl::os {

namespace {

Expected<addrinfo*> resolve(const std::string& host, std::uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return make_error("cannot resolve " + host + ": " + ::gai_strerror(rc));
  return found;
}

// The port a bound socket has.
std::uint16_t bound_port(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

Expected<ProbeSlot::Opened> ProbeSlot::open(const std::string& address, std::uint16_t port) {
  listener_.reset();
  auto listener = ProbeListener::open(address, port);
  if (!listener) return Error{listener.error()};
  listener_.emplace(std::move(listener).value());
  return Opened{++last_, listener_->port()};
}

void ProbeSlot::expire(std::uint64_t id) {
  if (id == last_) listener_.reset();
}

Expected<ProbeListener> ProbeListener::open(const std::string& address, std::uint16_t port) {
  auto found = resolve(address, port, true);
  if (!found) return Error{found.error()};
  int fd = ::socket((*found)->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int err = errno;
  // A given port a closed connection still waits on counts as free (as for
  // any server that will take it).
  int one = 1;
  if (fd >= 0 && port != 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd >= 0 && ::bind(fd, (*found)->ai_addr, (*found)->ai_addrlen) == 0 &&
      ::listen(fd, 64) == 0) {
    ::freeaddrinfo(*found);
    return ProbeListener(BoundSocket(fd, bound_port(fd)));
  }
  err = errno;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(*found);
  return make_error("cannot listen on " + address + (port ? ":" + std::to_string(port) : "") +
                    ": " + std::strerror(err));
}

BoundSocket& BoundSocket::operator=(BoundSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    port_ = other.port_;
    other.fd_ = -1;
  }
  return *this;
}

BoundSocket::~BoundSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<PortReservation> PortReservation::make(const std::string& address) {
  auto found = resolve(address, 0, true);
  if (!found) return Error{found.error()};
  int fd = ::socket((*found)->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
      ::bind(fd, (*found)->ai_addr, (*found)->ai_addrlen) == 0) {
    ::freeaddrinfo(*found);
    return PortReservation(BoundSocket(fd, bound_port(fd)));
  }
  int err = errno;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(*found);
  return make_error("cannot take a port on " + address + ": " + std::strerror(err));
}

Status probe_connect(const std::string& host, std::uint16_t port,
                     std::chrono::milliseconds timeout) {
  auto found = resolve(host, port, false);
  if (!found) return Error{found.error()};
  std::string where = host + ":" + std::to_string(port);
  int fd = ::socket((*found)->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(*found);
    return make_error(std::string("socket: ") + std::strerror(errno));
  }
  int rc = ::connect(fd, (*found)->ai_addr, (*found)->ai_addrlen);
  ::freeaddrinfo(*found);
  int err = rc == 0 ? 0 : errno;
  if (rc != 0 && err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) {
      ::close(fd);
      return make_error("no answer from " + where + " within " + std::to_string(timeout.count()) +
                        " ms");
    }
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  }
  ::close(fd);
  if (err != 0) return make_error("cannot connect to " + where + ": " + std::strerror(err));
  return Ok{};
}

}  // namespace atl::os
