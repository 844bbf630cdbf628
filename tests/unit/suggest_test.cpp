// "Did you mean": one candidate within a couple of typos, or none.
#include "atl/core/suggest.hpp"

#include <gtest/gtest.h>

namespace {

using atl::closest;
using atl::did_you_mean;
using atl::typo_distance;

TEST(Suggest, TyposAreCountedWithSwapsAsOne) {
  EXPECT_EQ(typo_distance("status", "status"), 0u);
  EXPECT_EQ(typo_distance("stauts", "status"), 1u);  // two letters swapped
  EXPECT_EQ(typo_distance("stat", "status"), 2u);
  EXPECT_EQ(typo_distance("", "abc"), 3u);
}

TEST(Suggest, TheNearestCandidateWithinReachAndNoneForATieOrAFarWord) {
  const std::vector<std::string> commands{"status", "stop", "logs", "run", "recover", "burn"};
  EXPECT_EQ(closest("stauts", commands), "status");
  EXPECT_EQ(closest("recovr", commands), "recover");
  EXPECT_EQ(closest("lgos", commands), "logs");
  EXPECT_FALSE(closest("deploy", commands)) << "nothing near";
  EXPECT_FALSE(closest("rum", {"run", "rue"})) << "a tie names neither";
  EXPECT_FALSE(closest("status", commands)) << "the word itself is no suggestion";
  EXPECT_EQ(did_you_mean("stauts", commands), " (did you mean 'status'?)");
  EXPECT_EQ(did_you_mean("zzz", commands), "");
  EXPECT_EQ(closest("--verbos", {"--verbose", "--json"}), "--verbose");
}

}  // namespace
