#include "atl/core/host_port.hpp"

#include <gtest/gtest.h>

TEST(ParseHostPort, Accepts) {
  auto a = atl::parse_host_port("127.0.0.1:6380");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(atl::parse_host_port("[::1]:80")->host, "::1");
  EXPECT_EQ(atl::parse_host_port("head-0.svc:1")->to_string(), "head-0.svc:1");
  // IPv6 comes back in brackets, so to_string() parses again (found by fuzzing).
  EXPECT_EQ(atl::parse_host_port("[::1]:80")->to_string(), "[::1]:80");
}

TEST(ParseHostPort, Rejects) {
  for (const char* bad : {"", "host", ":80", "host:", "host:0", "host:65536", "host:8a",
                          "[[[:[[[:]]:9", "::1:80", "[host]:80", "a b:80", "h\nx:80", "[]:80"}) {
    EXPECT_FALSE(atl::parse_host_port(bad).ok()) << bad;
  }
}
