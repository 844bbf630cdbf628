#include "atl/os/output_batching.hpp"

#include <gtest/gtest.h>

namespace {

using atl::os::OutputBatching;
using std::chrono::microseconds;
using T = OutputBatching::Clock::time_point;

OutputBatching::Options options() {
  OutputBatching::Options o;
  o.chunk_bytes = 1000;
  o.quiet = microseconds(2000);
  o.pause = microseconds(200);
  o.hold = microseconds(5000);
  return o;
}

T at(int us) { return T{} + microseconds(1'000'000 + us); }

TEST(OutputBatching, TheFirstLinesGoAtOnce) {
  OutputBatching b(options());
  EXPECT_FALSE(b.hold(at(0), 10));
  EXPECT_FALSE(b.holding());
}

TEST(OutputBatching, LinesAfterAQuietSpellGoAtOnce) {
  OutputBatching b(options());
  b.delivered(at(0));
  EXPECT_FALSE(b.hold(at(2000), 10));  // a training loop's print every 2 ms or slower
  b.delivered(at(2000));
  EXPECT_FALSE(b.hold(at(900'000), 10));
}

TEST(OutputBatching, LinesComingFastAreHeldForMore) {
  OutputBatching b(options());
  b.delivered(at(0));
  EXPECT_TRUE(b.hold(at(100), 10));
  EXPECT_TRUE(b.holding());
  EXPECT_EQ(b.pause(at(100)), microseconds(200));
  EXPECT_TRUE(b.hold(at(300), 400));  // more came, still under a chunk
}

TEST(OutputBatching, AWholeChunkIsNeverHeld) {
  OutputBatching b(options());
  b.delivered(at(0));
  EXPECT_FALSE(b.hold(at(100), 1000));
  EXPECT_TRUE(b.hold(at(100), 999));
  EXPECT_FALSE(b.hold(at(200), 5000));
}

TEST(OutputBatching, NothingToHoldIsNotHeld) {
  OutputBatching b(options());
  b.delivered(at(0));
  EXPECT_FALSE(b.hold(at(100), 0));
  EXPECT_FALSE(b.holding());
}

TEST(OutputBatching, ALineIsHeldAtMostTheHoldAndThePauseNeverPassesIt) {
  OutputBatching b(options());
  b.delivered(at(0));
  ASSERT_TRUE(b.hold(at(1000), 10));                // held from 1 ms
  EXPECT_TRUE(b.hold(at(5999), 20));                // 4.999 ms held
  EXPECT_EQ(b.pause(at(5900)), microseconds(100));  // only up to the hold's end
  EXPECT_EQ(b.pause(at(7000)), microseconds(0));
  EXPECT_FALSE(b.hold(at(6000), 30));  // 5 ms: they go
}

TEST(OutputBatching, ADeliveryEndsTheHold) {
  OutputBatching b(options());
  b.delivered(at(0));
  ASSERT_TRUE(b.hold(at(100), 10));
  b.delivered(at(400));
  EXPECT_FALSE(b.holding());
  EXPECT_EQ(b.pause(at(500)), microseconds(0));
  EXPECT_TRUE(b.hold(at(500), 10));  // still fast: held afresh, with a fresh hold
  EXPECT_TRUE(b.hold(at(5400), 10));
  EXPECT_FALSE(b.hold(at(5500), 10));
}

}  // namespace
