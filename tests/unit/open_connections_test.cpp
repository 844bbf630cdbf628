// open_connections: the clients a listener of this process still has (real
// sockets on 127.0.0.1 and ::1).
#include "atl/os/open_connections.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

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

using atl::os::describe_port_holder;
using atl::os::listening_inodes;
using atl::os::PortHolder;
using atl::os::who_listens_on;

// /proc/net/tcp's LISTEN rows (state 0A) on the port asked for, any address.
TEST(ListeningInodes, AreTheListenersOnThePort) {
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
      "1111 1 0000000000000000 100 0 0 10 0\n"
      "   1: 00000000:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
      "2222 1 0000000000000000 100 0 0 10 0\n"
      "   2: 0100007F:18EB 0100007F:A000 01 00000000:00000000 00:00000000 00000000     0        0 "
      "3333 1 0000000000000000 20 4 30 10 -1\n"
      "   3: 0100007F:18EC 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
      "4444 1 0000000000000000 100 0 0 10 0\n"
      "garbage\n";
  EXPECT_EQ(listening_inodes(table, 0x18EB), (std::vector<std::uint64_t>{1111, 2222}));
  EXPECT_EQ(listening_inodes(table, 0x18EC), (std::vector<std::uint64_t>{4444}));
  EXPECT_TRUE(listening_inodes(table, 80).empty());
  EXPECT_TRUE(listening_inodes("", 0x18EB).empty());
}

TEST(WhoListensOn, FindsTheProcessHoldingTheListener) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  ASSERT_EQ(::listen(listener, 4), 0);  // bound by listen() to a free port, on every address
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::uint16_t port = ntohs(addr.sin_port);
  auto holder = who_listens_on(port);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, ::getpid());
  EXPECT_EQ(holder->name, "atl_unit_tests");
  ::close(listener);
  EXPECT_FALSE(who_listens_on(port));
  EXPECT_EQ(describe_port_holder(std::nullopt), "");
  EXPECT_EQ(describe_port_holder(PortHolder{42, "gcs_server", "jo-b"}),
            "job jo-b's gcs_server (pid 42)");
  EXPECT_EQ(describe_port_holder(PortHolder{42, "nc", ""}), "nc (pid 42)");
}

}  // namespace
