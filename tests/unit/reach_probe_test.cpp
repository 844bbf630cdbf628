// The pre-flight's TCP probe on real sockets (127.0.0.1).
#include "atl/os/reach_probe.hpp"

#include <gtest/gtest.h>

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
