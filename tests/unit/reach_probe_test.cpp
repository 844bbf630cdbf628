// The pre-flight's TCP probe on real sockets (127.0.0.1).
#include "atl/os/reach_probe.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace std::chrono_literals;

TEST(ReachProbe, AListenerIsReachedAndAClosedOneIsNot) {
  std::uint16_t port = 0;
  {
    auto l = atl::os::ProbeListener::open("127.0.0.1");
    ASSERT_TRUE(l.ok()) << l.error();
    port = l->port();
    ASSERT_GT(port, 0);
    EXPECT_TRUE(atl::os::probe_connect("127.0.0.1", port, 2s).ok());
  }
  auto refused = atl::os::probe_connect("127.0.0.1", port, 2s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("cannot connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << refused.error();
}

// A round's timer ends its own listener only: a later round's, even one the
// kernel gave the same port (forced here), stays open.
TEST(ProbeSlot, AnEarlierRoundsTimerNeverClosesALaterRoundsListenerOnTheSamePort) {
  atl::os::ProbeSlot slot;
  auto first = slot.open("127.0.0.1");
  ASSERT_TRUE(first.ok()) << first.error();
  slot.close();  // the launch
  auto second = slot.open("127.0.0.1", first->port);
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_EQ(second->port, first->port);
  EXPECT_NE(second->id, first->id);
  slot.expire(first->id);  // the first round's timer, late
  EXPECT_TRUE(slot.is_open());
  EXPECT_TRUE(atl::os::probe_connect("127.0.0.1", second->port, 2s).ok());
  slot.expire(second->id);
  EXPECT_FALSE(slot.is_open());
  EXPECT_FALSE(atl::os::probe_connect("127.0.0.1", second->port, 2s).ok());
  // A new round replaces the one open: its connects reach the new port.
  auto third = slot.open("127.0.0.1");
  ASSERT_TRUE(third.ok());
  auto fourth = slot.open("127.0.0.1");
  ASSERT_TRUE(fourth.ok());
  slot.expire(third->id);
  EXPECT_TRUE(slot.is_open());
}

TEST(ReachProbe, BadAddressesAreNamed) {
  auto l = atl::os::ProbeListener::open("no.such.host.invalid");
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().find("no.such.host.invalid"), std::string::npos) << l.error();
  auto c = atl::os::probe_connect("no.such.host.invalid", 1, 1s);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("cannot resolve"), std::string::npos) << c.error();
  auto foreign = atl::os::ProbeListener::open("192.0.2.1");  // TEST-NET: not ours
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().find("cannot listen on 192.0.2.1"), std::string::npos);
}

namespace {

// A socket bound to 127.0.0.1:port (SO_REUSEADDR when `reuse`) and listening;
// -1 when the bind fails.
int listen_on(std::uint16_t port, bool reuse) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (reuse) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST(PortReservation, HeldForAReusingListenerAndRefusedUntilItListens) {
  auto held = atl::os::PortReservation::make("127.0.0.1");
  ASSERT_TRUE(held.ok()) << held.error();
  const std::uint16_t port = held->port();
  ASSERT_GT(port, 0);
  EXPECT_FALSE(atl::os::probe_connect("127.0.0.1", port, 2s).ok());  // nobody listens yet
  EXPECT_EQ(listen_on(port, false), -1);  // a plain bind is refused: the port is taken
  int listener = listen_on(port, true);   // what CAF's publish with reuse does
  ASSERT_GE(listener, 0) << std::strerror(errno);
  EXPECT_TRUE(atl::os::probe_connect("127.0.0.1", port, 2s).ok());
  ::close(listener);
}

TEST(PortReservation, ABadAddressIsNamed) {
  auto held = atl::os::PortReservation::make("no.such.host.invalid");
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.error().find("no.such.host.invalid"), std::string::npos) << held.error();
}
