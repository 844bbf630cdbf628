// PendingHandshakes: admission under the cap, deadlines reported once, finish.
#include "atl/core/pending_handshakes.hpp"

#include <gtest/gtest.h>

using atl::PendingHandshakes;
using namespace std::chrono_literals;

namespace {
const PendingHandshakes::Clock::time_point t0{};
}

TEST(PendingHandshakes, AtTheCapTheOldestWaitingOneGivesWay) {
  PendingHandshakes p(2, 5s);
  auto a = p.admit(1, t0);
  EXPECT_TRUE(a.first_step);
  EXPECT_FALSE(a.evicted);
  EXPECT_FALSE(p.admit(2, t0 + 1s).evicted);
  // A later step of a waiting handshake is no new one, even at the cap.
  auto again = p.admit(1, t0 + 2s);
  EXPECT_FALSE(again.first_step);
  EXPECT_FALSE(again.evicted);
  auto third = p.admit(3, t0 + 2s);
  EXPECT_TRUE(third.first_step);
  EXPECT_EQ(third.evicted, PendingHandshakes::Key{1});
  // The evicted one is counted until the server drops it, but never reported again.
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.take_expired(t0 + 1h), (std::vector<PendingHandshakes::Key>{2, 3}));
  EXPECT_TRUE(p.finish(1));
  EXPECT_EQ(p.size(), 2u);
}

TEST(PendingHandshakes, AFinishedOneMakesRoomWithoutEviction) {
  PendingHandshakes p(1, 5s);
  p.admit(1, t0);
  EXPECT_TRUE(p.finish(1));
  EXPECT_FALSE(p.admit(2, t0).evicted);
}

TEST(PendingHandshakes, AFinishedOrUnknownHandshakeIsGone) {
  PendingHandshakes p(4, 5s);
  p.admit(7, t0);
  EXPECT_TRUE(p.finish(7));
  EXPECT_FALSE(p.finish(7));
  EXPECT_FALSE(p.finish(8));
  EXPECT_EQ(p.size(), 0u);
  EXPECT_FALSE(p.next_deadline());
  EXPECT_TRUE(p.take_expired(t0 + 1h).empty());
}

TEST(PendingHandshakes, DeadlinesFallInOrderAndAreReportedOnce) {
  PendingHandshakes p(8, 5s);
  p.admit(1, t0);
  p.admit(2, t0 + 2s);
  p.admit(3, t0 + 1s);
  EXPECT_EQ(p.next_deadline(), t0 + 5s);
  EXPECT_TRUE(p.take_expired(t0 + 4999ms).empty());
  EXPECT_EQ(p.take_expired(t0 + 6s), (std::vector<PendingHandshakes::Key>{1, 3}));
  EXPECT_EQ(p.next_deadline(), t0 + 7s);
  EXPECT_TRUE(p.take_expired(t0 + 6s).empty());  // once each
  // Expired ones stay counted until the server drops them.
  EXPECT_EQ(p.size(), 3u);
  EXPECT_FALSE(p.admit(1, t0 + 6s).first_step);
  EXPECT_TRUE(p.finish(1));
  EXPECT_EQ(p.take_expired(t0 + 7s), (std::vector<PendingHandshakes::Key>{2}));
  EXPECT_FALSE(p.next_deadline());
}

TEST(PendingHandshakes, FinishingBeforeTheDeadlineCancelsIt) {
  PendingHandshakes p(8, 5s);
  p.admit(1, t0);
  p.admit(2, t0);  // the same deadline
  EXPECT_TRUE(p.finish(1));
  EXPECT_EQ(p.take_expired(t0 + 5s), (std::vector<PendingHandshakes::Key>{2}));
}

TEST(PendingHandshakes, AZeroCapDropsEachAtOnce) {
  PendingHandshakes p(0, 5s);
  EXPECT_EQ(p.admit(1, t0).evicted, PendingHandshakes::Key{1});
  EXPECT_FALSE(p.next_deadline());
  EXPECT_TRUE(p.finish(1));
}
