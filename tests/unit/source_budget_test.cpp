#include "atl/core/source_budget.hpp"

#include <gtest/gtest.h>

namespace atl {
namespace {

using namespace std::chrono_literals;
using Clock = SourceBudget::Clock;

SourceBudget small(std::size_t max_sources = 100) {
  SourceBudget::Options o;
  o.per_second = 10;
  o.burst = 20;
  o.max_sources = max_sources;
  return SourceBudget(o);
}

TEST(SourceBudget, AnAddressOpensItsBurstAtOnceThenItsRate) {
  auto budget = small();
  const Clock::time_point t0{};
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += budget.admit("10.0.0.9", t0);
  EXPECT_EQ(admitted, 20);
  // A second later: 10 more, not 11.
  admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += budget.admit("10.0.0.9", t0 + 1s);
  EXPECT_EQ(admitted, 10);
  // Half a second: 5.
  admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += budget.admit("10.0.0.9", t0 + 1500ms);
  EXPECT_EQ(admitted, 5);
}

TEST(SourceBudget, AFloodFromOneAddressNeverTakesAnothersBudget) {
  auto budget = small();
  const Clock::time_point t0{};
  for (int ms = 0; ms <= 5000; ++ms) budget.admit("10.0.0.66", t0 + std::chrono::milliseconds(ms));
  // The job's pod and atlctl on another host: admitted at once, every time.
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(budget.admit("10.0.0.2", t0 + 5s)) << i;
  EXPECT_FALSE(budget.admit("10.0.0.66", t0 + 5s));
}

TEST(SourceBudget, AQuietAddressGetsItsBurstBackButNoMore) {
  auto budget = small();
  const Clock::time_point t0{};
  for (int i = 0; i < 20; ++i) budget.admit("a", t0);
  EXPECT_FALSE(budget.admit("a", t0));
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += budget.admit("a", t0 + 1h);
  EXPECT_EQ(admitted, 20);
  // Time that runs backwards (it cannot with steady_clock) gives nothing.
  EXPECT_FALSE(budget.admit("a", t0));
}

TEST(SourceBudget, RefusalsAreReportedByAddressOnceEach) {
  auto budget = small();
  const Clock::time_point t0{};
  for (int i = 0; i < 25; ++i) budget.admit("b", t0);
  for (int i = 0; i < 30; ++i) budget.admit("a", t0);
  budget.admit("c", t0);
  auto refused = budget.take_refusals();
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0].source, "a");
  EXPECT_EQ(refused[0].count, 10);
  EXPECT_EQ(refused[1].source, "b");
  EXPECT_EQ(refused[1].count, 5);
  EXPECT_TRUE(budget.take_refusals().empty());
}

TEST(SourceBudget, IdleAddressesMakeRoomAndAFullTableRefusesNobodyForItsSize) {
  auto budget = small(2);
  const Clock::time_point t0{};
  EXPECT_TRUE(budget.admit("a", t0));
  for (int i = 0; i < 25; ++i) budget.admit("b", t0);  // b floods, refused 5 times
  EXPECT_EQ(budget.sources(), 2u);
  // Full, nobody idle yet ("a" took a token at t0): "c" is admitted untracked.
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(budget.admit("c", t0)) << i;
  EXPECT_EQ(budget.sources(), 2u);
  // Later "a" is idle again (full bucket): forgotten, "c" tracked in its place;
  // "b" is kept while its refusals are unreported.
  EXPECT_TRUE(budget.admit("c", t0 + 10s));
  EXPECT_EQ(budget.sources(), 2u);
  budget.take_refusals();
  for (int i = 0; i < 19; ++i) EXPECT_TRUE(budget.admit("c", t0 + 10s));
  EXPECT_FALSE(budget.admit("c", t0 + 10s));
}

}  // namespace
}  // namespace atl
