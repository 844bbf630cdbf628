#include "atl/core/rank_set.hpp"

#include <gtest/gtest.h>

#include "atl/core/split.hpp"
#include "param_name.hpp"

using Ranks = std::vector<int>;

TEST(ParseRankSet, SeedForms) {
  EXPECT_EQ(*atl::parse_rank_set("all", 4), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(*atl::parse_rank_set("1,2,3", 8), (Ranks{1, 2, 3}));
  EXPECT_EQ(*atl::parse_rank_set("1-8", 9), (Ranks{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(*atl::parse_rank_set("0,2-4,7", 8), (Ranks{0, 2, 3, 4, 7}));
}

TEST(ParseRankSet, SortsAndDeduplicates) {
  EXPECT_EQ(*atl::parse_rank_set("3,1,1-2", 4), (Ranks{1, 2, 3}));
  EXPECT_EQ(*atl::parse_rank_set("2-2", 4), (Ranks{2}));
}

struct BadRankSet {
  const char* text;
  const char* named;  // the part the message must name
};

class ParseRankSetRejects : public testing::TestWithParam<BadRankSet> {};

TEST_P(ParseRankSetRejects, NamingTheBadPart) {
  auto r = atl::parse_rank_set(GetParam().text, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(GetParam().named), std::string::npos) << r.error();
}

INSTANTIATE_TEST_SUITE_P(Malformed, ParseRankSetRejects,
                         testing::Values(BadRankSet{"5-2", "5"}, BadRankSet{"2-1", "2-1"},
                                         BadRankSet{"a", "'a'"}, BadRankSet{"1,,2", "1,,2"},
                                         BadRankSet{"-1", "-1"}, BadRankSet{"4", "4"},
                                         BadRankSet{"0-9", "9"}, BadRankSet{"", "empty"},
                                         BadRankSet{"1,", "1,"}, BadRankSet{",1", ",1"},
                                         BadRankSet{"1-", "1-"}, BadRankSet{"0x1", "0x1"},
                                         BadRankSet{"ALL", "ALL"}, BadRankSet{" 1", " 1"}),
                         [](const testing::TestParamInfo<BadRankSet>& info) {
                           return atl::test::param_name(info.index, info.param.text);
                         });

TEST(SplitList, KeepsEveryItemEmptyOnesIncluded) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(atl::split_list("a,b,,c"), (V{"a", "b", "", "c"}));
  EXPECT_EQ(atl::split_list(""), V{""});
  EXPECT_EQ(atl::split_list("a,"), (V{"a", ""}));
  EXPECT_EQ(atl::split_list("k1=v;k2=w", ';'), (V{"k1=v", "k2=w"}));
}
