// open_connections: the clients a listener of this process still has (real
// sockets on 127.0.0.1 and ::1).
#include "atl/os/open_connections.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace {

bool eventually_clients(std::uint16_t port, std::size_t want) {
  for (int i = 0; i < 500; ++i) {
    auto n = atl::os::clients_connected_on(port);
    if (n.ok() && *n == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(OpenConnections, AnAcceptedClientCountsUntilItLeaves) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::uint16_t port = ntohs(addr.sin_port);
  EXPECT_TRUE(eventually_clients(port, 0));
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  // The accepted end is ours and on the port; the client's end is ours too
  // (this process) but on another local port.
  EXPECT_TRUE(eventually_clients(port, 1));
  ::close(client);  // the peer left: CLOSE_WAIT, no longer a client
  EXPECT_TRUE(eventually_clients(port, 0));
  ::close(accepted);
  ::close(listener);
}

TEST(OpenConnections, IPv6ClientsCountTooAndOtherPortsDoNot) {
  int listener = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(listener);
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::uint16_t port = ntohs(addr.sin6_port);
  int client = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  EXPECT_TRUE(eventually_clients(port, 1));
  EXPECT_TRUE(eventually_clients(static_cast<std::uint16_t>(port + 1), 0));
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

}  // namespace
