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

TEST(ParseEnvSpec, SeedForms) {
  EXPECT_EQ(*atl::parse_env_spec("NCCL_DEBUG=WARN"), (atl::EnvMap{{"NCCL_DEBUG", "WARN"}}));
  EXPECT_EQ(*atl::parse_env_spec("k1=v1,v1b;k2=v2"), (atl::EnvMap{{"k1", "v1,v1b"}, {"k2", "v2"}}));
  EXPECT_EQ(*atl::parse_env_spec("A="), (atl::EnvMap{{"A", ""}}));
}

TEST(ParseEnvSpec, RejectsNamingTheBadPart) {
  for (auto [bad, named] :
       std::vector<std::pair<const char*, const char*>>{{"", "empty"},
                                                        {"novalue", "novalue"},
                                                        {"a=1;;b=2", "a=1;;b=2"},
                                                        {"a=1;", "a=1;"},
                                                        {"1x=2", "1x"},
                                                        {"a=1;b", "'b'"}}) {
    auto r = atl::parse_env_spec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find(named), std::string::npos) << r.error();
  }
}

TEST(ParseWorkerList, AllOrPodNames) {
  EXPECT_TRUE(atl::parse_worker_list("all")->empty());
  EXPECT_EQ(*atl::parse_worker_list("jo-x-worker-0,jo-x-worker-3"),
            (std::vector<std::string>{"jo-x-worker-0", "jo-x-worker-3"}));
  for (const char* bad : {"", "a,,b", "a,", "Bad_Name", "a b"})
    EXPECT_FALSE(atl::parse_worker_list(bad).ok()) << bad;
}
