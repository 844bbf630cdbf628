#include "atl/supervisor/debug_runs.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using atl::supervisor::Fate;
using namespace std::chrono_literals;

namespace {

// Replies and members are plain strings here.
using Runs = atl::supervisor::DebugRuns<std::string>;
using Pairs = std::vector<std::pair<std::int32_t, std::int32_t>>;

std::vector<std::pair<std::int32_t, std::string>> on(std::vector<std::pair<int, std::string>> v) {
  return {v.begin(), v.end()};
}

}  // namespace

TEST(DebugRuns, RunsGetGrowingIdsAndATrackedOneHoldsTheJob) {
  Runs runs;
  auto& first = runs.open(true, false, "echo a", 0ms, on({{0, "p0"}, {1, "p1"}}));
  EXPECT_EQ(first.id, 1);
  EXPECT_EQ(first.ranks.size(), 2u);
  EXPECT_EQ(runs.tracked(), 1);
  auto& forced = runs.open(false, false, "echo f", 0ms, on({{0, "p0"}}));  // run -f
  EXPECT_EQ(forced.id, 2);
  EXPECT_EQ(runs.tracked(), 1);  // -f holds nothing
  EXPECT_EQ(runs.fate(2), Fate::live);
  EXPECT_EQ(runs.fate(3), Fate::unknown);
  EXPECT_EQ(runs.next_id(), 3);
}

TEST(DebugRuns, ARunKeepsItsRoundFiguresInOrderUpToItsBound) {
  Runs runs;
  auto& burn = runs.open(true, false, "burn -t gemm -d 1m", 0ms, on({{0, "p0"}}));
  for (std::size_t i = 0; i < atl::supervisor::kFiguresPerRun + 3; ++i)
    ASSERT_TRUE(
        runs.add_figure(burn.id, {"p0", 0, "gemm_tflops", "", static_cast<int>(i + 1), 600.0 + i}));
  ASSERT_EQ(burn.figures.size(), atl::supervisor::kFiguresPerRun);
  EXPECT_EQ(burn.figures.front().round, 1);
  EXPECT_EQ(burn.figures.back().round, static_cast<int>(atl::supervisor::kFiguresPerRun));
  EXPECT_EQ(burn.figures_dropped, 3u);
  EXPECT_FALSE(runs.add_figure(99, {"p0", 0, "gemm_tflops", "", 1, 1}));  // no such run
}

TEST(DebugRuns, OnlyTheNewestRunsWithFiguresKeepThem) {
  Runs runs;
  const std::size_t n = atl::supervisor::kRunsWithFigures + 2;
  for (std::size_t i = 0; i < n; ++i) {
    auto& run = runs.open(false, false, "burn", 0ms, on({{0, "p0"}}));
    runs.add_figure(run.id, {"p0", 0, "gemm_tflops", "", 1, 1.0});
    runs.add_figure(run.id, {"p0", 0, "gemm_tflops", "", 2, 2.0});  // the same run: no release
    runs.retire(run.id);  // ended runs keep theirs while they are among the newest
  }
  for (std::size_t id = 1; id <= n; ++id) {
    const auto* run = runs.find(static_cast<std::int32_t>(id));
    ASSERT_NE(run, nullptr);
    const bool kept = id > 2;
    EXPECT_EQ(run->figures.size(), kept ? 2u : 0u) << id;
    EXPECT_EQ(run->figures_released, !kept) << id;
  }
  // A run without figures releases nothing.
  runs.open(false, false, "run true", 0ms, on({{0, "p0"}}));
  EXPECT_EQ(runs.find(3)->figures.size(), 2u);
}

TEST(DebugRuns, ReleasingTheTrackedRunMarksItStoppedSoACheckGivesNoVerdict) {
  Runs runs;
  runs.open(true, true, "check -t gpu", 0ms, on({{0, "p0"}}));
  EXPECT_EQ(runs.release_tracked(), 1);
  EXPECT_EQ(runs.tracked(), 0);
  EXPECT_TRUE(runs.find(1)->stopped);
  EXPECT_EQ(runs.release_tracked(), 0);  // nothing held any more
}

TEST(DebugRuns, ALostPodsRunningRanksAreFoundThroughTheIndex) {
  Runs runs;
  runs.open(true, false, "a", 0ms, on({{0, "p0"}, {1, "p1"}, {2, "p1"}}));
  runs.open(false, false, "b", 0ms, on({{1, "p1"}}));
  runs.live(1)->ranks.mark_done(2, 0, 0, "");
  EXPECT_EQ(runs.running_on("p1"), (Pairs{{1, 1}, {2, 1}}));
  EXPECT_TRUE(runs.running_on("p9").empty());
}

TEST(DebugRuns, RetiredRunsAreKeptUpToTheBoundThenDroppedWithTheirIndex) {
  Runs runs(2);
  for (int i = 0; i < 3; ++i) {
    auto& r = runs.open(false, false, "x", 0ms, on({{0, "p0"}}));
    r.ranks.mark_done(0, 0, 0, "");
    runs.retire(r.id);
  }
  EXPECT_EQ(runs.fate(1), Fate::dropped);
  EXPECT_EQ(runs.fate(2), Fate::finished);
  EXPECT_EQ(runs.fate(3), Fate::finished);
  EXPECT_EQ(runs.live(3), nullptr);  // an ended run takes no more reports
  ASSERT_NE(runs.find(3), nullptr);
  std::vector<int> seen;
  runs.for_each([&](std::int32_t id, const Runs::Run&) { seen.push_back(id); });
  EXPECT_EQ(seen, (std::vector<int>{2, 3}));
  EXPECT_TRUE(runs.running_on("p0").empty());
}

// Ended runs are bounded by their rank records as well as by count, and
// retire() names the runs it dropped (their streams are forgotten).
TEST(DebugRuns, RetiredRunsAreBoundedByTheirRanksAndTheDroppedAreNamed) {
  Runs runs(100, 5);
  auto run_of = [&](int ranks) -> Runs::Run& {
    std::vector<std::pair<std::int32_t, std::string>> on_pods;
    for (int r = 0; r < ranks; ++r) on_pods.emplace_back(r, "p" + std::to_string(r));
    auto& run = runs.open(false, false, "x", 0ms, on_pods);
    for (int r = 0; r < ranks; ++r) run.ranks.mark_done(r, 0, 0, "");
    return run;
  };
  EXPECT_TRUE(runs.retire(run_of(2).id).empty());  // run 1: 2 records
  EXPECT_TRUE(runs.retire(run_of(3).id).empty());  // run 2: 5 in all
  EXPECT_EQ(runs.kept_rank_records(), 5u);
  EXPECT_EQ(runs.retire(run_of(1).id), (std::vector<std::int32_t>{1}));  // 6 > 5: run 1 goes
  EXPECT_EQ(runs.fate(1), Fate::dropped);
  EXPECT_EQ(runs.kept_rank_records(), 4u);
  EXPECT_EQ(runs.retire(run_of(3).id), (std::vector<std::int32_t>{2}));  // 7 > 5: run 2 goes
  EXPECT_EQ(runs.kept_rank_records(), 4u);
  EXPECT_EQ(runs.fate(3), Fate::finished);
  EXPECT_TRUE(runs.running_on("p2").empty());  // the dropped runs' index entries went too
}

TEST(DebugRuns, TheLatestVerdictOfEachPodIsKeptWithItsReasonOnlyWhenItFailed) {
  Runs runs;
  runs.record_verdict("p0", 1, false, "exit code 1");
  runs.record_verdict("p1", 1, true, "ignored");
  EXPECT_EQ(runs.verdicts().at("p0").reason, "exit code 1");
  EXPECT_EQ(runs.verdicts().at("p1").reason, "");
  runs.record_verdict("p0", 2, true, "");
  EXPECT_TRUE(runs.verdicts().at("p0").passed);
  EXPECT_EQ(runs.verdicts().at("p0").run, 2);
}
