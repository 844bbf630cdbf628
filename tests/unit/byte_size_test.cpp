#include "atl/core/byte_size.hpp"

#include <gtest/gtest.h>

TEST(ParseByteSize, BinaryAndDecimalUnits) {
  EXPECT_EQ(*atl::parse_byte_size("1024"), 1024);
  EXPECT_EQ(*atl::parse_byte_size("512Mi"), 512LL << 20);
  EXPECT_EQ(*atl::parse_byte_size("16Gi"), 16LL << 30);
  EXPECT_EQ(*atl::parse_byte_size("1G"), 1000000000LL);
  EXPECT_EQ(*atl::parse_byte_size("2k"), 2000);
  EXPECT_EQ(*atl::parse_byte_size("3Ti"), 3LL << 40);
}

TEST(ParseByteSize, RejectsMalformed) {
  for (const char* bad : {"", "Gi", "1.5Gi", "-1", "12XB", "1 Gi", "99999999999999999Ti"}) {
    EXPECT_FALSE(atl::parse_byte_size(bad).ok()) << bad;
  }
}

TEST(FormatByteSize, UsesBinaryUnits) {
  EXPECT_EQ(atl::format_byte_size(1LL << 30), "1Gi");
  EXPECT_EQ(atl::format_byte_size(1536), "1.5Ki");
  EXPECT_EQ(atl::format_byte_size(100), "100");
}
