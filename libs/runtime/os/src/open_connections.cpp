#include "atl/os/open_connections.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace atl::os {

namespace {

std::uint16_t port_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  return 0;
}

// A connected TCP socket on `port`, still established.
bool client_on(int fd, std::uint16_t port) {
  sockaddr_storage local{}, peer{};
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return false;
  if (port_of(local) != port) return false;
  len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;  // a listener
  tcp_info info{};
  len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  return info.tcpi_state == TCP_ESTABLISHED;
}

}  // namespace

Expected<std::size_t> clients_connected_on(std::uint16_t port) {
  DIR* fds = ::opendir("/proc/self/fd");
  if (!fds) return make_error(std::string("cannot read /proc/self/fd: ") + std::strerror(errno));
  const int own = ::dirfd(fds);
  std::size_t found = 0;
  while (dirent* e = ::readdir(fds)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || end == e->d_name || fd == own) continue;
    if (client_on(static_cast<int>(fd), port)) ++found;
  }
  ::closedir(fds);
  return found;
}

}  // namespace atl::os
