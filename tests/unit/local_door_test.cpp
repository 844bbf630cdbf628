#include "atl/os/local_door.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace atl::os {
namespace {

using namespace std::chrono_literals;

// Ports no head listens on (heads take ephemeral ones): the abstract names
// below are this test's own.
constexpr std::uint16_t kPortA = 1;
constexpr std::uint16_t kPortB = 2;
constexpr std::uint16_t kPortC = 3;

TEST(LocalDoor, IsNamedAfterTheBoundAddressAndPort) {
  EXPECT_EQ(door_name("127.0.0.1", 41401), "atl-door/127.0.0.1:41401");
  EXPECT_EQ(door_name("0.0.0.0", 1), "atl-door/0.0.0.0:1");
  EXPECT_EQ(relay_door_name("10.0.0.5", 6379), "atl-door/via/10.0.0.5:6379");
}

TEST(LocalDoor, OwnAddressesAreLoopbackAndThisNamespacesInterfaces) {
  EXPECT_TRUE(is_own_address("127.0.0.1"));
  EXPECT_TRUE(is_own_address("127.8.9.10"));
  EXPECT_TRUE(is_own_address("::1"));
  EXPECT_FALSE(is_own_address("192.0.2.1"));  // TEST-NET-1: nobody's
  EXPECT_FALSE(is_own_address(""));
  EXPECT_FALSE(is_own_address("not an address"));
}

TEST(LocalDoor, OpensForItsOwnAddressAndForAHeadOnEveryAddress) {
  auto exact = listen_door("127.0.0.1", kPortA);
  ASSERT_TRUE(exact.ok()) << exact.error();
  auto fd = open_door("127.0.0.1", kPortA);
  ASSERT_TRUE(fd.has_value());
  EXPECT_TRUE(peer_is_trusted(*fd));
  EXPECT_EQ(peer_uid(*fd), ::geteuid());
  ::close(*fd);
  // Another address of this host is another listener's.
  EXPECT_FALSE(open_door("127.0.0.2", kPortA).has_value());
  // A second door of the same name is refused, naming it.
  auto twice = listen_door("127.0.0.1", kPortA);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().find("atl-door/127.0.0.1:1"), std::string::npos) << twice.error();
  ::close(*exact);

  auto every = listen_door("0.0.0.0", kPortB);
  ASSERT_TRUE(every.ok()) << every.error();
  auto any = open_door("127.0.0.1", kPortB);
  ASSERT_TRUE(any.has_value());
  ::close(*any);
  // An address of another host never gets this host's door.
  EXPECT_FALSE(open_door("192.0.2.1", kPortB).has_value());
  ::close(*every);
  // Gone with its listener: nothing left behind.
  EXPECT_FALSE(open_door("127.0.0.1", kPortB).has_value());
}

TEST(LocalDoor, AWorkernodesRelayServesAHeadOnAnotherHost) {
  // No door for a head elsewhere, until a workernode here relays to it.
  EXPECT_FALSE(open_door("192.0.2.1", kPortC).has_value());
  auto relay = listen_relay_door("192.0.2.1", kPortC);
  ASSERT_TRUE(relay.ok()) << relay.error();
  auto fd = open_door("192.0.2.1", kPortC);
  ASSERT_TRUE(fd.has_value());
  ::close(*fd);
  // One relay per head and namespace: a second workernode here goes without.
  EXPECT_FALSE(listen_relay_door("192.0.2.1", kPortC).ok());
  // Another port is another head.
  EXPECT_FALSE(open_door("192.0.2.1", kPortB).has_value());
  ::close(*relay);
}

TEST(LocalDoor, ABindThatDoesNotResolveIsNamed) {
  auto bad = listen_door("no-such-host.invalid", kPortA);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("no-such-host.invalid"), std::string::npos) << bad.error();
}

TEST(LocalDoor, ReadsFramesAndTellsATimeoutFromAClose) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  DoorFrameReader reader;
  std::string frame;
  EXPECT_EQ(read_door_frame(pair[0], reader, frame, std::chrono::steady_clock::now() + 50ms),
            DoorRead::timeout);
  std::string two = encode_door_frame("one") + encode_door_frame("two");
  ASSERT_TRUE(write_door(pair[1], two.substr(0, 5)).ok());
  std::thread rest([&] {
    std::this_thread::sleep_for(20ms);
    (void)write_door(pair[1], two.substr(5));
  });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  ASSERT_EQ(read_door_frame(pair[0], reader, frame, deadline), DoorRead::frame);
  EXPECT_EQ(frame, "one");
  ASSERT_EQ(read_door_frame(pair[0], reader, frame, deadline), DoorRead::frame);
  EXPECT_EQ(frame, "two");
  rest.join();
  // A bad length is an error naming it; a close is a close.
  ASSERT_TRUE(write_door(pair[1], std::string("\x7f\xff\xff\xff", 4)).ok());
  std::string why;
  EXPECT_EQ(read_door_frame(pair[0], reader, frame, deadline, &why), DoorRead::error);
  EXPECT_NE(why.find("bytes"), std::string::npos) << why;
  DoorFrameReader fresh;
  ::close(pair[1]);
  EXPECT_EQ(read_door_frame(pair[0], fresh, frame, deadline), DoorRead::closed);
  ::close(pair[0]);
}

}  // namespace
}  // namespace atl::os

TEST(LocalDoor, TheCaOfAHelloIsTheFilesTextNothingWithoutTlsAndNoneIfUnreadable) {
  EXPECT_EQ(atl::os::door_ca(""), std::string());  // --insecure: no CA
  EXPECT_EQ(atl::os::door_ca("/nonexistent/ca.pem"), std::nullopt);
  char path[] = "/tmp/atl-door-ca-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string pem = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n";
  ASSERT_EQ(::write(fd, pem.data(), pem.size()), static_cast<ssize_t>(pem.size()));
  ::close(fd);
  EXPECT_EQ(atl::os::door_ca(path), pem);
  ::unlink(path);
}
