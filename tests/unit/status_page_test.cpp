#include "atl/core/status_page.hpp"

#include <gtest/gtest.h>

#include <vector>

using atl::on_newest_page;
using atl::on_page;

namespace {

std::vector<int> page(std::size_t total, std::int32_t offset, std::int32_t limit, bool newest) {
  std::vector<int> out;
  for (std::size_t i = 0; i < total; ++i)
    if (newest ? on_newest_page(i, total, offset, limit) : on_page(i, offset, limit))
      out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

TEST(StatusPage, APageFromTheStartSkipsThenTakesAndANegativeLimitTakesTheRest) {
  EXPECT_EQ(page(5, 1, 2, false), (std::vector<int>{1, 2}));
  EXPECT_EQ(page(5, 3, -1, false), (std::vector<int>{3, 4}));
  EXPECT_EQ(page(5, 0, 0, false), std::vector<int>{});
  EXPECT_EQ(page(5, 9, 2, false), std::vector<int>{});
  EXPECT_EQ(page(5, -4, 2, false), (std::vector<int>{0, 1}));  // a negative offset is none
}

TEST(StatusPage, APageFromTheNewestKeepsTheOldestFirstOrder) {
  EXPECT_EQ(page(5, 0, 2, true), (std::vector<int>{3, 4}));  // the two newest
  EXPECT_EQ(page(5, 1, 2, true), (std::vector<int>{2, 3}));  // skipping the newest
  EXPECT_EQ(page(5, 0, -1, true), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(page(5, 4, 9, true), (std::vector<int>{0}));
  EXPECT_EQ(page(5, 5, 9, true), std::vector<int>{});
  EXPECT_EQ(page(5, 0, 0, true), std::vector<int>{});
  EXPECT_EQ(page(0, 0, 3, true), std::vector<int>{});
  EXPECT_FALSE(on_newest_page(5, 5, 0, -1));  // past the end
}
