#include "atl/core/duration.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsTheSeedsForms) {
  EXPECT_EQ(*atl::parse_duration("20s"), 20s);
  EXPECT_EQ(*atl::parse_duration("5m"), 5min);
  EXPECT_EQ(*atl::parse_duration("10min"), 10min);
  EXPECT_EQ(*atl::parse_duration("300ms"), 300ms);
  EXPECT_EQ(*atl::parse_duration("2h"), 2h);
  EXPECT_EQ(*atl::parse_duration("0s"), 0s);
  EXPECT_EQ(*atl::parse_duration("0"), 0s);  // nothing to misread
}

TEST(ParseDuration, ABareNumberIsRefusedNamingTheUnits) {
  for (const char* bare : {"15", "10", "1"}) {
    auto r = atl::parse_duration(bare);
    ASSERT_FALSE(r.ok()) << bare;
    EXPECT_NE(r.error().find("give a unit"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find(std::string(bare) + "s"), std::string::npos) << r.error();
  }
}

TEST(ParseDuration, RejectsMalformedWithTheText) {
  for (const char* bad : {"", "s", "5x", "-1s", "1.5s", " 5s", "5s ", "5 s", "m5", "5mins",
                          "99999999999999999999s"}) {
    auto r = atl::parse_duration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    if (*bad) {
      EXPECT_NE(r.error().find(bad), std::string::npos) << r.error();
    }
  }
}

TEST(ParseDuration, RejectsOverflow) {
  EXPECT_FALSE(atl::parse_duration("999999999999999999h").ok());
  // Long before INT64 milliseconds: a clock's now() + this must not overflow.
  EXPECT_FALSE(atl::parse_duration("2562048h").ok());
  EXPECT_NE(atl::parse_duration("8785h").error().find("at most"), std::string::npos);
  EXPECT_TRUE(atl::parse_duration("8784h").ok());
  EXPECT_EQ(*atl::parse_duration("8784h"), atl::kMaxDuration);
}

TEST(FormatDuration, PicksTheLargestExactUnit) {
  EXPECT_EQ(atl::format_duration(300s), "5m");
  EXPECT_EQ(atl::format_duration(20s), "20s");
  EXPECT_EQ(atl::format_duration(1500ms), "1500ms");
  EXPECT_EQ(atl::format_duration(2h), "2h");
  EXPECT_EQ(atl::format_duration(0s), "0s");
}
