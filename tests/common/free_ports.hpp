// Ports for tests that must name a port before something listens on it (a
// ring's members, a head restarted on the same address). Picked below the
// kernel's ephemeral range: a port from bind(0) can be handed to any process
// binding 0 or connecting out (a parallel test's head, its dashboard, a
// client's source port) before ours listens, and two bind(0) calls can even
// return the same port. Each candidate is held bound until all are chosen.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace atl::test {

inline std::vector<std::uint16_t> unused_ports(int n) {
  int low = 32768;
  if (std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(10000, std::max(10001, low - 1));
  std::vector<std::uint16_t> ports;
  std::vector<int> held;
  auto try_bind = [&](std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (fd >= 0) ::close(fd);
      return false;
    }
    held.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
    return true;
  };
  for (int tries = 0; static_cast<int>(ports.size()) < n && tries < 1000; ++tries)
    try_bind(static_cast<std::uint16_t>(pick(rng)));
  // No luck below the range: what bind(0) gives (still held, so distinct).
  while (static_cast<int>(ports.size()) < n)
    if (!try_bind(0)) break;
  for (int fd : held) ::close(fd);
  return ports;
}

}  // namespace atl::test
