#include "atl/core/reply_code.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

using atl::ReplyCode;

TEST(ReplyCode, EveryCodeRoundTripsOnTheWireWithItsOwnName) {
  std::set<std::string> names;
  for (std::int32_t v = 0; v <= 6; ++v) {
    auto code = atl::reply_code_from_wire(v);
    ASSERT_TRUE(code.has_value()) << v;
    EXPECT_EQ(atl::wire(*code), v);
    EXPECT_TRUE(names.insert(atl::to_string(*code)).second) << atl::to_string(*code);
  }
  // atlctl's exit statuses are these numbers (the guide's 0/1/2/3, 4 unreachable).
  EXPECT_EQ(atl::wire(ReplyCode::ok), 0);
  EXPECT_EQ(atl::wire(ReplyCode::failed), 1);
  EXPECT_EQ(atl::wire(ReplyCode::usage), 2);
  EXPECT_EQ(atl::wire(ReplyCode::refused), 3);
  EXPECT_EQ(atl::wire(ReplyCode::unreachable), 4);
  EXPECT_STREQ(atl::to_string(ReplyCode::timeout), "timeout");
}

TEST(ReplyCodeRejects, NumbersNoCodeHas) {
  for (std::int32_t v : {-1, 7, 42, -2147483647 - 1, 2147483647})
    EXPECT_FALSE(atl::reply_code_from_wire(v).has_value()) << v;
}
