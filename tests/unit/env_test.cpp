#include "atl/core/env.hpp"

#include <gtest/gtest.h>

TEST(ParseEnvAssignment, SplitsAtTheFirstEquals) {
  auto kv = atl::parse_env_assignment("A=b=c");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "A");
  EXPECT_EQ(kv->second, "b=c");
  EXPECT_EQ(atl::parse_env_assignment("EMPTY=")->second, "");
}

TEST(ParseEnvAssignment, RejectsBadNames) {
  for (const char* bad : {"novalue", "=v", "1A=v", "A-B=v", "A B=v"}) {
    auto r = atl::parse_env_assignment(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(EnvStrings, RoundTrip) {
  atl::EnvMap env{{"A", "1"}, {"B", "x=y"}};
  EXPECT_EQ(atl::env_from_strings(atl::to_env_strings(env)), env);
  EXPECT_EQ(atl::env_from_strings({"NOEQUALS", "=x", "K=v"}), (atl::EnvMap{{"K", "v"}}));
}
