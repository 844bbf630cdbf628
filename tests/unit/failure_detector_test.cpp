#include "atl/core/failure_detector.hpp"

#include <gtest/gtest.h>

using atl::FailureDetector;
using namespace std::chrono_literals;

namespace {

// A fake clock: the detector never reads time itself.
const FailureDetector::TimePoint t0{};

}  // namespace

TEST(FailureDetector, APeerHeardWithinTheTimeoutIsKept) {
  FailureDetector d(3s);
  d.watch("a", t0);
  for (auto t = 500ms; t <= 60s; t += 500ms) {
    d.heard("a", t0 + t);
    EXPECT_TRUE(d.expire(t0 + t + 2999ms).empty());
  }
  EXPECT_TRUE(d.watching("a"));
}

TEST(FailureDetector, SilenceLongerThanTheTimeoutExpiresOnce) {
  FailureDetector d(3s);
  d.watch("a", t0);
  d.heard("a", t0 + 1s);
  EXPECT_TRUE(d.expire(t0 + 4s).empty()) << "exactly the timeout is not yet a loss";
  auto lost = d.expire(t0 + 4s + 1ms);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0], "a");
  EXPECT_FALSE(d.watching("a"));
  EXPECT_TRUE(d.expire(t0 + 60s).empty()) << "reported once";
}

TEST(FailureDetector, ALateHeartbeatDoesNotReviveAnExpiredPeer) {
  FailureDetector d(3s);
  d.watch("a", t0);
  ASSERT_EQ(d.expire(t0 + 5s).size(), 1u);
  d.heard("a", t0 + 6s);
  EXPECT_FALSE(d.watching("a"));
  d.watch("a", t0 + 7s);  // rejoined: watched anew
  EXPECT_TRUE(d.expire(t0 + 9s).empty());
  EXPECT_EQ(d.expire(t0 + 10s + 1ms).size(), 1u);
}

TEST(FailureDetector, HeardNeverMovesBackInTime) {
  FailureDetector d(3s);
  d.watch("a", t0 + 2s);
  d.heard("a", t0 + 1s);  // a reordered, older stamp
  EXPECT_EQ(*d.silence("a", t0 + 4s), 2s);
}

TEST(FailureDetector, ExpiresOnlyTheSilentPeersOldestFirst) {
  FailureDetector d(3s);
  d.watch("b", t0 + 1s);
  d.watch("a", t0 + 2s);
  d.watch("c", t0 + 2s);
  d.heard("c", t0 + 5s);
  auto lost = d.expire(t0 + 5500ms);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0], "b");
  EXPECT_EQ(lost[1], "a");
  EXPECT_TRUE(d.watching("c"));
}

TEST(FailureDetector, NextDeadlineIsTheOldestPlusTheTimeout) {
  FailureDetector d(3s);
  EXPECT_FALSE(d.next_deadline().has_value());
  d.watch("a", t0 + 2s);
  d.watch("b", t0 + 1s);
  EXPECT_EQ(*d.next_deadline(), t0 + 4s);
  d.forget("b");
  EXPECT_EQ(*d.next_deadline(), t0 + 5s);
  EXPECT_FALSE(d.silence("b", t0).has_value());
}

TEST(Heartbeats, OptionsAreValidated) {
  EXPECT_TRUE(atl::validate_heartbeats({500ms, 3s}).ok());
  EXPECT_TRUE(atl::validate_heartbeats({500ms, 1s}).ok());
  auto zero = atl::validate_heartbeats({0ms, 3s});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("interval"), std::string::npos);
  auto tight = atl::validate_heartbeats({500ms, 900ms});
  ASSERT_FALSE(tight.ok());
  EXPECT_NE(tight.error().find("timeout (900ms)"), std::string::npos) << tight.error();
}

TEST(FailureDetector, TheWatchersOwnStallIsExcused) {
  FailureDetector d(3s);
  auto t0 = FailureDetector::Clock::time_point{} + 100s;
  d.watch("a", t0);
  d.watch("b", t0 + 2s);
  // The watcher stalled 5 s (its timer came that late): nobody is lost for it.
  d.excuse(5s, t0 + 6s);
  EXPECT_TRUE(d.expire(t0 + 6s).empty());
  EXPECT_EQ(*d.silence("a", t0 + 6s), 1s);
  EXPECT_EQ(*d.silence("b", t0 + 6s), 0s);  // never pushed past now
  // Silence after the stall still counts.
  EXPECT_EQ(d.expire(t0 + 8500ms), std::vector<std::string>{"a"});
  EXPECT_EQ(d.expire(t0 + 9500ms), std::vector<std::string>{"b"});
  // Nothing to excuse: no change.
  d.watch("c", t0);
  d.excuse(0s, t0 + 1s);
  d.excuse(-1s, t0 + 1s);
  EXPECT_EQ(*d.silence("c", t0 + 1s), 1s);
}
