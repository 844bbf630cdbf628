#include "atl/core/log_stream.hpp"

#include <gtest/gtest.h>

#include "atl/core/job_spec.hpp"

TEST(LogStream, UserCodeAndDriver) {
  EXPECT_EQ(atl::stream_name(3), "rank-3");
  EXPECT_EQ(atl::stream_prefix(3), "[rank 3] ");
  EXPECT_EQ(atl::stream_name(atl::kDriverStream), "driver");
  EXPECT_EQ(atl::stream_prefix(atl::kDriverStream), "[driver] ");
  EXPECT_FALSE(atl::decode_debug_stream(0).has_value());
  EXPECT_FALSE(atl::decode_debug_stream(atl::kDriverStream).has_value());
  EXPECT_FALSE(atl::decode_debug_stream(atl::kRayHeadStream).has_value());
  EXPECT_EQ(atl::stream_name(atl::kRayHeadStream), "ray-head");
  EXPECT_EQ(atl::stream_prefix(atl::kRayHeadStream), "[ray-head] ");
}

TEST(LogStream, DebugStreamsRoundTripAndNeverCollide) {
  for (int run : {1, 2, 1000}) {
    for (int rank : {0, 1, 7, atl::kMaxRanksPerRun - 1}) {
      auto s = atl::debug_stream(run, rank);
      EXPECT_LT(s, atl::kDriverStream);
      auto id = atl::decode_debug_stream(s);
      ASSERT_TRUE(id.has_value());
      EXPECT_EQ(id->run, run);
      EXPECT_EQ(id->rank, rank);
    }
  }
  EXPECT_NE(atl::debug_stream(1, 1), atl::debug_stream(2, 0));
  EXPECT_EQ(atl::stream_name(atl::debug_stream(2, 3)), "run-2-rank-3");
  EXPECT_EQ(atl::stream_prefix(atl::debug_stream(2, 3)), "[rank 3] ");
}

TEST(LogStream, TaskStreamsRoundTripAboveEveryRank) {
  for (int task : {1, 2, 12345}) {
    auto s = atl::task_stream(task);
    EXPECT_GT(s, atl::kMaxWorldSize);
    EXPECT_EQ(atl::decode_task_stream(s), task);
    EXPECT_FALSE(atl::decode_debug_stream(s).has_value());
  }
  for (std::int32_t other : {0, 5, static_cast<std::int32_t>(atl::kMaxWorldSize - 1),
                             atl::kDriverStream, atl::kRayHeadStream, atl::debug_stream(1, 0)})
    EXPECT_FALSE(atl::decode_task_stream(other).has_value()) << other;
  EXPECT_EQ(atl::stream_name(atl::task_stream(7)), "task-7");
  EXPECT_EQ(atl::stream_prefix(atl::task_stream(7)), "[task 7] ");
}
