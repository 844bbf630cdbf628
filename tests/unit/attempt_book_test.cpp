// Every attempt as the job page lists it, in fake time: started, ended, how
// (a fault, a stop then recover, the head's restart, the job's end).
#include "atl/supervisor/attempt_book.hpp"

#include <gtest/gtest.h>

namespace atl::supervisor {
namespace {

TEST(AttemptBook, EachAttemptEndsOnceAndSaysHow) {
  AttemptBook b;
  b.submitted(1000);
  b.submitted(9999);  // the first word stands
  b.began(1, 2000);
  b.began(1, 2100);  // a relaunch of the same attempt
  b.ended(AttemptEnd::fault, "pod w-1 was lost", 3000);
  b.ended(AttemptEnd::failed, "later words", 3100);  // ended once
  b.began(2, 4000);
  b.began(3, 5000, AttemptEnd::recovered, "atlctl stop, then recover");
  b.job_ended(AttemptEnd::succeeded, "", 6000);
  ASSERT_EQ(b.all().size(), 3u);
  EXPECT_EQ(b.all()[0].started_ms, 2000);
  EXPECT_EQ(b.all()[0].ended_ms, 3000);
  EXPECT_EQ(b.all()[0].how, AttemptEnd::fault);
  EXPECT_EQ(b.all()[0].detail, "pod w-1 was lost");
  EXPECT_EQ(b.all()[1].how, AttemptEnd::recovered);
  EXPECT_EQ(b.all()[1].ended_ms, 5000);
  EXPECT_EQ(b.all()[2].how, AttemptEnd::succeeded);
  EXPECT_EQ(b.all()[2].ended_ms, 6000);
  EXPECT_EQ(*b.submitted_ms(), 1000);
  EXPECT_EQ(*b.started_ms(), 2000);
  EXPECT_EQ(*b.ended_ms(), 6000);
  EXPECT_STREQ(to_string(AttemptEnd::recovered), "stopped and recovered");
}

TEST(AttemptBook, AHeadRestartEndsTheAttemptItsRecordRanAndTheHistoryIsBounded) {
  AttemptBook b;
  b.submitted(100);
  b.resumed_after(4, 100);
  b.began(5, 200);
  ASSERT_EQ(b.all().size(), 2u);
  EXPECT_EQ(b.all()[0].attempt, 4);
  EXPECT_EQ(b.all()[0].started_ms, -1) << "the earlier head knew it";
  EXPECT_EQ(b.all()[0].how, AttemptEnd::head_restart);
  EXPECT_EQ(b.all()[1].how, AttemptEnd::running);
  EXPECT_FALSE(b.ended_ms());
  for (int k = 6; k < 6 + static_cast<int>(AttemptBook::kKept) + 5; ++k) b.began(k, 300 + k);
  EXPECT_EQ(b.all().size(), AttemptBook::kKept);
  EXPECT_EQ(b.all().back().how, AttemptEnd::running);
  EXPECT_EQ(*b.started_ms(), 200) << "the job's start stays";
}

}  // namespace
}  // namespace atl::supervisor
