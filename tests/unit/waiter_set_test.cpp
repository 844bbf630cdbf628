#include "atl/supervisor/waiter_set.hpp"

#include <gtest/gtest.h>

#include <string>

using atl::supervisor::WaiterId;
using atl::supervisor::WaiterSet;

// Replies are plain strings here: who would be answered.
using Set = WaiterSet<int, std::string>;

TEST(WaiterSet, TakeAnswersEveryWaiterOfTheKeyOldestFirstAndNoOther) {
  Set s;
  s.add(7, "a");
  s.add(8, "other");
  s.add(7, "b");
  EXPECT_EQ(s.waiting_for(7), 2u);
  EXPECT_EQ(s.take(7), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.waiting_for(7), 0u);
  EXPECT_TRUE(s.take(7).empty());  // a second event finds no one
  EXPECT_EQ(s.size(), 1u);
}

TEST(WaiterSet, ADeadlineAnswersItsWaiterOnceAndALateTimerFindsNothing) {
  Set s;
  WaiterId first = s.add(1, "a");
  WaiterId second = s.add(1, "b");
  auto expired = s.expire(first);
  ASSERT_TRUE(expired.has_value());
  EXPECT_EQ(expired->first, 1);
  EXPECT_EQ(expired->second, "a");
  EXPECT_FALSE(s.expire(first).has_value());  // its timer twice
  EXPECT_EQ(s.take(1), std::vector<std::string>{"b"});
  EXPECT_FALSE(s.expire(second).has_value());  // answered before its deadline
  EXPECT_FALSE(s.expire(12345).has_value());   // never existed
}

TEST(WaiterSet, IdsAreNeverReusedSoAnOldTimerCannotHitANewWaiter) {
  Set s;
  WaiterId old = s.add(1, "old");
  s.take(1);
  WaiterId fresh = s.add(1, "new");
  EXPECT_NE(old, fresh);
  EXPECT_FALSE(s.expire(old).has_value());
  EXPECT_EQ(s.waiting_for(1), 1u);
}

TEST(WaiterSet, TakeAllAbandonsEveryone) {
  Set s;
  s.add(1, "a");
  s.add(2, "b");
  WaiterId c = s.add(1, "c");
  EXPECT_EQ(s.take_all(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(s.size(), 0u);
  EXPECT_FALSE(s.expire(c).has_value());
  EXPECT_TRUE(s.take(1).empty());
}

TEST(WaiterSet, TakeAllWithKeysSaysWhatEachWaitedForOldestFirst) {
  Set s;
  s.add(2, "a");
  WaiterId b = s.add(1, "b");
  s.add(2, "c");
  using Pair = std::pair<int, std::string>;
  EXPECT_EQ(s.take_all_with_keys(), (std::vector<Pair>{{2, "a"}, {1, "b"}, {2, "c"}}));
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.waiting_for(2), 0u);
  EXPECT_FALSE(s.expire(b).has_value());  // its timer later finds nothing
  EXPECT_TRUE(s.take_all_with_keys().empty());
}
