#include "atl/core/rank_table.hpp"

#include <gtest/gtest.h>

#include <random>

using atl::RankTable;

namespace {

// The definitions the counters stand for: a walk over every record.
bool walk_all_done(const RankTable& t) {
  for (const auto& [stream, r] : t)
    if (!r.done) return false;
  return true;
}

bool walk_all_started(const RankTable& t) {
  for (const auto& [stream, r] : t)
    if (!r.started && !r.done) return false;
  return true;
}

}  // namespace

TEST(RankTable, AnEmptyTableHasAllStartedAndAllDone) {
  RankTable t;
  EXPECT_TRUE(t.all_started());
  EXPECT_TRUE(t.all_done());
  EXPECT_TRUE(t.empty());
}

TEST(RankTable, StartsThenEndsRankByRank) {
  RankTable t;
  t.add(0, "w0", 3);
  t.add(1, "w1", 3);
  EXPECT_FALSE(t.all_started());
  EXPECT_FALSE(t.all_done());
  EXPECT_EQ(t.starting_count(), 2u);
  t.mark_started(0, 100);
  EXPECT_EQ(t.starting_count(), 1u);
  EXPECT_FALSE(t.all_started());
  t.mark_started(1, 101);
  EXPECT_TRUE(t.all_started());
  EXPECT_FALSE(t.all_done());
  EXPECT_TRUE(t.mark_done(0, 0, 0, ""));
  EXPECT_FALSE(t.all_done());
  EXPECT_EQ(t.done_count(), 1u);
  EXPECT_TRUE(t.mark_done(1, 2, 0, ""));
  EXPECT_TRUE(t.all_done());
  const auto& r = t.find(1)->second;
  EXPECT_EQ(r.pod, "w1");
  EXPECT_EQ(r.attempt, 3);
  EXPECT_EQ(r.pid, 101);
  EXPECT_EQ(r.code, 2);
}

TEST(RankTable, TheFirstEndCountsAndLaterOnesChangeNothing) {
  RankTable t;
  t.add(0, "w0");
  ASSERT_TRUE(t.mark_done(0, 255, 0, "pod lost"));
  EXPECT_FALSE(t.mark_done(0, 0, 0, ""));  // the exit that comes after the loss
  EXPECT_EQ(t.find(0)->second.note, "pod lost");
  EXPECT_EQ(t.find(0)->second.code, 255);
  EXPECT_EQ(t.done_count(), 1u);
  EXPECT_TRUE(t.all_done());
}

TEST(RankTable, ARankThatEndedWithoutStartingCountsAsStarted) {
  RankTable t;
  t.add(0, "w0");
  t.add(1, "w1");
  t.mark_done(0, 127, 0, "could not start");
  t.mark_started(1, 7);
  EXPECT_TRUE(t.all_started());
  // A late "started" of an ended rank is recorded without counting twice.
  t.mark_started(0, 9);
  EXPECT_TRUE(t.all_started());
  EXPECT_EQ(t.done_count(), 1u);
  EXPECT_TRUE(t.mark_done(1, 0, 0, ""));
  EXPECT_TRUE(t.all_done());
}

TEST(RankTable, UnknownStreamsChangeNothing) {
  RankTable t;
  t.add(0, "w0");
  t.mark_started(5, 1);
  EXPECT_FALSE(t.mark_done(5, 0, 0, ""));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(t.all_started());
  EXPECT_FALSE(t.all_done());
}

TEST(RankTable, AddingAgainReplacesTheRecordAndItsCounts) {
  RankTable t;
  t.add(-1, "head", 1);
  t.add(0, "w0", 1);
  t.mark_started(-1, 10);
  t.mark_done(-1, 0, 0, "");
  t.mark_started(0, 11);
  EXPECT_TRUE(t.all_started());
  // A recover that restarts the driver alone: a new record for it.
  t.add(-1, "head", 2);
  EXPECT_FALSE(t.all_started());
  EXPECT_FALSE(t.all_done());
  EXPECT_EQ(t.done_count(), 0u);
  EXPECT_EQ(t.find(-1)->second.attempt, 2);
  EXPECT_FALSE(t.find(-1)->second.started);
  EXPECT_EQ(t.size(), 2u);
}

TEST(RankTable, EndRemainingEndsOnlyTheRunningWithTheNote) {
  RankTable t;
  for (int i = 0; i < 4; ++i) t.add(i, "w" + std::to_string(i));
  t.mark_done(1, 1, 0, "");
  EXPECT_EQ(t.end_remaining("abandoned"), 3u);
  EXPECT_TRUE(t.all_done());
  EXPECT_EQ(t.find(1)->second.note, "");
  EXPECT_EQ(t.find(1)->second.code, 1);
  EXPECT_EQ(t.find(2)->second.note, "abandoned");
  EXPECT_EQ(t.end_remaining("again"), 0u);
}

TEST(RankTable, ClearForgetsEverything) {
  RankTable t;
  t.add(0, "w0");
  t.mark_done(0, 0, 0, "");
  t.clear();
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.done_count(), 0u);
  t.add(0, "w0");
  EXPECT_FALSE(t.all_done());
}

// Any sequence of changes: the counters agree with a walk over the records.
TEST(RankTable, CountersAgreeWithAWalkOverRandomChanges) {
  std::mt19937 rng(20261130);
  for (int round = 0; round < 50; ++round) {
    RankTable t;
    for (int step = 0; step < 400; ++step) {
      int stream = static_cast<int>(rng() % 12) - 2;  // -2..9, some never added
      switch (rng() % 6) {
        case 0:
        case 1:
          t.add(stream, "w", static_cast<int>(rng() % 3));
          break;
        case 2:
          t.mark_started(stream, static_cast<int>(rng() % 1000));
          break;
        case 3:
          t.mark_done(stream, static_cast<int>(rng() % 3), 0, "");
          break;
        case 4:
          if (rng() % 20 == 0) t.end_remaining("end");
          break;
        default:
          if (rng() % 40 == 0) t.clear();
      }
      ASSERT_EQ(t.all_done(), walk_all_done(t)) << "round " << round << " step " << step;
      ASSERT_EQ(t.all_started(), walk_all_started(t)) << "round " << round << " step " << step;
      std::size_t done = 0, starting = 0;
      for (const auto& [s, r] : t) {
        done += r.done;
        starting += !r.started && !r.done;
      }
      ASSERT_EQ(t.done_count(), done);
      ASSERT_EQ(t.starting_count(), starting);
    }
  }
}
