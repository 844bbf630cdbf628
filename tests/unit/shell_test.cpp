#include "atl/core/shell.hpp"

#include <gtest/gtest.h>

TEST(ShellQuote, LeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(atl::shell_quote("python3"), "python3");
  EXPECT_EQ(atl::shell_quote("a b"), "'a b'");
  EXPECT_EQ(atl::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(atl::shell_quote(""), "''");
  EXPECT_EQ(atl::shell_quote("$HOME"), "'$HOME'");
}

TEST(CommandFromWords, OneWordIsAShellLineSeveralAreAnArgv) {
  EXPECT_EQ(atl::command_from_words({"ps -ef | grep x"}), "ps -ef | grep x");
  EXPECT_EQ(atl::command_from_words({"python3", "-c", "print(1)"}), "python3 -c 'print(1)'");
}
