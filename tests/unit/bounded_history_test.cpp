#include "atl/supervisor/bounded_history.hpp"

#include <gtest/gtest.h>

#include <string>

using atl::supervisor::BoundedHistory;
using atl::supervisor::Fate;

using History = BoundedHistory<int, std::string>;

TEST(BoundedHistory, ARecordIsLiveThenKeptThenDroppedOldestEndFirst) {
  History h(2);
  for (int id = 1; id <= 4; ++id) h.add(id, "r" + std::to_string(id));
  EXPECT_EQ(h.fate(3), Fate::live);
  EXPECT_TRUE(h.finish(3).empty());
  EXPECT_TRUE(h.finish(1).empty());
  EXPECT_EQ(h.fate(3), Fate::finished);
  EXPECT_EQ(*h.find(3), "r3");
  EXPECT_EQ(h.live(3), nullptr);
  auto dropped = h.finish(4);  // three ended, two kept: 3 (ended first) goes
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].first, 3);
  EXPECT_EQ(dropped[0].second, "r3");
  EXPECT_EQ(h.fate(3), Fate::dropped);
  EXPECT_EQ(h.find(3), nullptr);
  EXPECT_EQ(h.fate(1), Fate::finished);
  EXPECT_EQ(h.fate(2), Fate::live);
  EXPECT_EQ(h.live_count(), 1u);
  EXPECT_EQ(h.kept_count(), 2u);
}

TEST(BoundedHistory, IdsNeverHandedOutAreUnknownAndASecondEndChangesNothing) {
  History h(5);
  EXPECT_EQ(h.fate(1), Fate::unknown);  // nothing yet
  h.add(7, "a");
  h.add(8, "b");
  EXPECT_EQ(h.fate(6), Fate::unknown);
  EXPECT_EQ(h.fate(9), Fate::unknown);
  EXPECT_EQ(h.fate(-1), Fate::unknown);
  h.finish(7);
  EXPECT_TRUE(h.finish(7).empty());
  EXPECT_TRUE(h.finish(42).empty());
  EXPECT_EQ(h.kept_count(), 1u);
}

TEST(BoundedHistory, AHistoryOfZeroStillKeepsTheOneJustEnded) {
  History h(0);
  h.add(1, "a");
  h.add(2, "b");
  h.finish(1);
  EXPECT_EQ(h.fate(1), Fate::finished);
  auto dropped = h.finish(2);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].first, 1);
  EXPECT_EQ(h.fate(1), Fate::dropped);
}

TEST(BoundedHistory, ForEachWalksLiveAndKeptInIdOrder) {
  History h(10);
  for (int id = 1; id <= 6; ++id) h.add(id, std::to_string(id));
  for (int id : {5, 2, 3}) h.finish(id);
  std::string seen;
  h.for_each([&](int id, const std::string& r) { seen += std::to_string(id) + r + ","; });
  EXPECT_EQ(seen, "11,22,33,44,55,66,");
  int live = 0;
  h.for_each_live([&](int, std::string&) { ++live; });
  EXPECT_EQ(live, 3);
}

TEST(BoundedHistory, ADroppedRecordIsNamedWithWhatIsKept) {
  EXPECT_EQ(atl::supervisor::dropped_record_line("task", 7, 10000, "finished tasks"),
            "task 7 ended and its record was dropped (the supervisor keeps the newest 10000 "
            "finished tasks)");
}

// Records weigh (a debug run: its ranks): the history holds at most
// `max_weight` of them together, the newest kept whatever it weighs.
TEST(BoundedHistory, EndedRecordsAreBoundedByWeightToo) {
  History h(100, 10);
  for (int id = 1; id <= 5; ++id) h.add(id, "r" + std::to_string(id));
  EXPECT_TRUE(h.finish(1, 4).empty());
  EXPECT_TRUE(h.finish(2, 4).empty());
  EXPECT_EQ(h.kept_weight(), 8u);
  auto dropped = h.finish(3, 4);  // 12 > 10: the oldest goes
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].first, 1);
  EXPECT_EQ(h.kept_weight(), 8u);
  dropped = h.finish(4, 50);  // heavier than the bound alone: kept, the rest go
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].first, 2);
  EXPECT_EQ(dropped[1].first, 3);
  EXPECT_EQ(h.fate(4), Fate::finished);
  EXPECT_EQ(h.kept_weight(), 50u);
  dropped = h.finish(5, 1);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].first, 4);
  EXPECT_EQ(h.kept_weight(), 1u);
}
