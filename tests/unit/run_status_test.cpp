// RunRankStatus::failure(): the line atlctl run/check/burn prints for a rank.
#include "atl/core/run_status.hpp"

#include <gtest/gtest.h>

namespace atl {
namespace {

RunRankStatus ended(std::int32_t code, std::int32_t signal, std::string error = "") {
  RunRankStatus r;
  r.started = error.empty();
  r.done = true;
  r.code = code;
  r.signal = signal;
  r.error = std::move(error);
  return r;
}

TEST(RunRankStatus, ARankThatHasNotEndedHasNoFailure) {
  RunRankStatus r;
  r.started = true;
  r.code = 7;  // not ended: its code means nothing yet
  EXPECT_EQ(r.failure(), "");
}

TEST(RunRankStatus, AnEndSaysCouldNotRunFirstThenTheSignalThenTheCode) {
  EXPECT_EQ(ended(0, 0).failure(), "");
  EXPECT_EQ(ended(3, 0).failure(), "exit code 3");
  EXPECT_EQ(ended(0, 9).failure(), "killed by signal 9");
  EXPECT_EQ(ended(255, 0, "pod lost").failure(), "could not run: pod lost");
}

}  // namespace
}  // namespace atl
