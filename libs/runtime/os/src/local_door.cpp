#include "atl/os/local_door.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace atl::os {

namespace {

sockaddr_un door_address(const std::string& name, socklen_t& len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract: a leading NUL, the name, no terminator.
  std::size_t n = std::min(name.size(), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return addr;
}

std::string numeric(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  else if (sa->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  return text;
}

// Every address `host` resolves to, numeric; none when it does not resolve.
std::vector<std::string> addresses_of(const std::string& host) {
  std::vector<std::string> out;
  // A numeric address is itself (getaddrinfo would ask the resolver's
  // configuration and netlink first: ~0.4 ms of an atlctl call).
  in_addr v4{};
  in6_addr v6{};
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1 && ::inet_ntop(AF_INET, &v4, text, sizeof text))
    return {text};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1 &&
      ::inet_ntop(AF_INET6, &v6, text, sizeof text))
    return {text};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return out;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    auto text = numeric(ai->ai_addr);
    if (!text.empty() && std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace

std::string door_name(const std::string& ip, std::uint16_t port) {
  return "atl-door/" + ip + ":" + std::to_string(port);
}

std::string relay_door_name(const std::string& head_ip, std::uint16_t port) {
  return "atl-door/via/" + head_ip + ":" + std::to_string(port);
}

std::optional<uid_t> peer_uid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred.uid;
}

bool peer_is_trusted(int fd) {
  auto uid = peer_uid(fd);
  return uid && (*uid == ::geteuid() || *uid == 0);
}

namespace {

Expected<int> listen_named(const std::string& name) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  socklen_t len = 0;
  auto addr = door_address(name, len);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    int e = errno;
    ::close(fd);
    return make_error("the local door " + name + ": " + std::strerror(e));
  }
  return fd;
}

// A connected door of that name whose listener is trusted.
std::optional<int> connect_named(const std::string& name) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  socklen_t len = 0;
  auto addr = door_address(name, len);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 && peer_is_trusted(fd)) return fd;
  ::close(fd);
  return std::nullopt;
}

}  // namespace

Expected<int> listen_door(const std::string& bind, std::uint16_t port) {
  auto ips = addresses_of(bind);
  if (ips.empty()) return make_error("cannot resolve " + bind);
  return listen_named(door_name(ips.front(), port));
}

std::optional<std::string> door_ca(const std::string& ca_path) {
  if (ca_path.empty()) return std::string();
  std::ifstream in(ca_path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Expected<int> listen_relay_door(const std::string& head, std::uint16_t port) {
  auto ips = addresses_of(head);
  if (ips.empty()) return make_error("cannot resolve " + head);
  return listen_named(relay_door_name(ips.front(), port));
}

bool is_own_address(const std::string& address) {
  if (address.empty()) return false;  // (an interface's link-layer entry reads as "")
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127)
    return true;
  if (address == "::1") return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool own = false;
  for (ifaddrs* i = list; i && !own; i = i->ifa_next)
    if (i->ifa_addr && numeric(i->ifa_addr) == address) own = true;
  ::freeifaddrs(list);
  return own;
}

std::optional<int> open_door(const std::string& host, std::uint16_t port) {
  const auto ips = addresses_of(host);
  for (const auto& ip : ips) {
    if (!is_own_address(ip)) continue;
    // The head bound to that address, or to every address (then no other
    // listener can hold this port on any of them).
    const std::string every = ip.find(':') == std::string::npos ? "0.0.0.0" : "::";
    for (const auto& bound : {ip, every})
      if (auto fd = connect_named(door_name(bound, port))) return fd;
  }
  // A workernode of this namespace that relays to that head.
  for (const auto& ip : ips)
    if (auto fd = connect_named(relay_door_name(ip, port))) return fd;
  return std::nullopt;
}

Status write_door(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 1000);
        continue;
      }
      return make_error(std::string("write: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Ok{};
}

DoorRead read_door_frame(int fd, DoorFrameReader& reader, std::string& frame,
                         std::chrono::steady_clock::time_point deadline, std::string* why) {
  char buf[65536];
  while (true) {
    if (auto got = reader.next()) {
      frame = std::move(*got);
      return DoorRead::frame;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return DoorRead::timeout;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (ready < 0 && errno != EINTR) {
      if (why) *why = std::string("poll: ") + std::strerror(errno);
      return DoorRead::error;
    }
    if (ready <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return DoorRead::closed;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      if (errno == ECONNRESET) return DoorRead::closed;
      if (why) *why = std::string("read: ") + std::strerror(errno);
      return DoorRead::error;
    }
    if (auto fed = reader.feed(std::string_view(buf, static_cast<std::size_t>(n))); !fed) {
      if (why) *why = fed.error();
      return DoorRead::error;
    }
  }
}

}  // namespace atl::os
