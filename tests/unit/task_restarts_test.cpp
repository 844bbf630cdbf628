// TaskRestarts: a detached task's chain, started again by the head when its
// task ends other than by a kill, within its count, later each time it dies
// young. Fake time: the time points are given.
#include "atl/supervisor/task_restarts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

namespace atl::supervisor {
namespace {

using namespace std::chrono_literals;
using TimePoint = TaskRestarts::TimePoint;

TaskRequest request(std::int32_t restarts) {
  TaskRequest r;
  r.command = "exec python -m atl._worker actor";
  r.env = {"ATL_ACTOR_PAYLOAD_PARTS=1"};
  r.detached = true;
  r.restarts = restarts;
  return r;
}

bool says_restart(const TaskRequest& r, int n) {
  const std::string want = "ATL_TASK_RESTARTS=" + std::to_string(n);
  return std::count(r.env.begin(), r.env.end(), want) == 1 &&
         std::count_if(r.env.begin(), r.env.end(), [](const std::string& e) {
           return e.rfind("ATL_TASK_RESTARTS=", 0) == 0;
         }) == 1;
}

TEST(TaskRestarts, AChainStartsAgainAsItWasUpToItsCountThenSaysItsRestartsAreUsed) {
  TaskRestarts r;
  TimePoint t{};
  r.keep(1, request(2), t);
  EXPECT_EQ(r.current(1), 1);
  t += 60s;
  auto due = r.ended(1, t);
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->again);
  EXPECT_EQ(due->chain, 1);
  EXPECT_EQ(due->after, 0ms) << "a task that ran a while is started again at once";
  EXPECT_EQ(r.current(1), 0) << "waiting: nothing runs";
  auto first = r.next(1);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->command, "exec python -m atl._worker actor");
  EXPECT_TRUE(says_restart(*first, 1));
  EXPECT_NE(std::find(first->env.begin(), first->env.end(), "ATL_ACTOR_PAYLOAD_PARTS=1"),
            first->env.end());
  EXPECT_FALSE(r.next(1)) << "once per end";
  r.started(1, 5, t);
  EXPECT_EQ(r.current(1), 5) << "its maker's id names the task running now";
  EXPECT_EQ(r.current(5), 5);
  t += 60s;
  due = r.ended(5, t);
  ASSERT_TRUE(due && due->again);
  auto second = r.next(1);
  ASSERT_TRUE(second);
  EXPECT_TRUE(says_restart(*second, 2)) << "the count, not the env of the last";
  r.started(1, 7, t);
  EXPECT_EQ(r.used(1), 2);
  due = r.ended(7, t + 60s);
  ASSERT_TRUE(due);
  EXPECT_FALSE(due->again);
  EXPECT_EQ(due->used, 2);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.used(1), -1);
  EXPECT_FALSE(r.ended(7, t + 61s)) << "once";
}

TEST(TaskRestarts, ATaskThatDiesYoungWaitsLongerEachTimeAndARunThatLastsStartsTheCountOver) {
  TaskRestarts r;
  TimePoint t{};
  r.keep(1, request(-1), t);
  std::vector<Millis> waits;
  TaskId running = 1;
  for (int i = 0; i < 9; ++i) {
    t += 1s;  // each dies a second after its start
    auto due = r.ended(running, t);
    ASSERT_TRUE(due && due->again);
    waits.push_back(due->after);
    t += due->after;
    ASSERT_TRUE(r.next(1));
    running = 100 + i;
    r.started(1, running, t);
  }
  EXPECT_EQ(waits, (std::vector<Millis>{0ms, 500ms, 1s, 2s, 4s, 8s, 16s, 30s, 30s}));
  t += TaskRestarts::kStable;
  auto due = r.ended(running, t);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->after, 0ms) << "it ran kStable: at once again";
  ASSERT_TRUE(r.next(1));
  r.started(1, 200, t);
  due = r.ended(200, t + 1s);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->after, TaskRestarts::kFirstDelay) << "and the count starts over";
  EXPECT_EQ(r.used(1), 10) << "-1: without end";
}

TEST(TaskRestarts, AKillOfAnyOfItsTasksEndsTheChainRunningOrWaiting) {
  TaskRestarts r;
  TimePoint t{};
  r.keep(1, request(5), t);
  r.ended(1, t + 1s);
  ASSERT_TRUE(r.next(1));
  r.started(1, 4, t + 1s);
  // Killed by its first id (its maker's): the running task is the one to end.
  EXPECT_EQ(r.current(1), 4);
  EXPECT_TRUE(r.killed(1));
  auto end = r.ended(4, t + 2s);
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->again) << "a kill's end starts nothing";
  EXPECT_TRUE(end->killed);
  EXPECT_EQ(r.size(), 0u);
  // Killed while it waits to start again: the start that was due does nothing.
  r.keep(10, request(5), t);
  ASSERT_TRUE(r.ended(10, t + 1s));
  EXPECT_EQ(r.current(10), 0);
  EXPECT_TRUE(r.killed(10));
  EXPECT_FALSE(r.next(10));
  EXPECT_EQ(r.size(), 0u);
  // Killed by its running task's own id (the process asking its own end).
  r.keep(20, request(5), t);
  EXPECT_TRUE(r.killed(20));
  end = r.ended(20, t + 1s);
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->again);
  EXPECT_EQ(r.size(), 0u);
}

TEST(TaskRestarts, AChainsOwnReservationIsGivenBackOnceAtItsEndForGoodHoweverItComes) {
  TaskRestarts r;
  TimePoint t{};
  auto own = [](std::int32_t restarts, std::int64_t group) {
    TaskRequest q = request(restarts);
    q.group = group;
    q.own_group = true;
    return q;
  };
  // Its restarts used.
  r.keep(1, own(1, 40), t);
  auto due = r.ended(1, t + 1s);
  ASSERT_TRUE(due && due->again);
  EXPECT_EQ(due->release, 0) << "not while it goes on";
  ASSERT_TRUE(r.next(1));
  r.started(1, 2, t + 1s);
  due = r.ended(2, t + 2s);
  ASSERT_TRUE(due && !due->again);
  EXPECT_FALSE(due->killed);
  EXPECT_EQ(due->release, 40);
  // Killed while it runs: its end gives it back, the kill does not.
  r.keep(3, own(-1, 41), t);
  EXPECT_EQ(r.killed(3), std::optional<std::int64_t>(0));
  due = r.ended(3, t + 1s);
  ASSERT_TRUE(due && !due->again && due->killed);
  EXPECT_EQ(due->release, 41);
  // Killed while it waits: the kill gives it back (no end will come).
  r.keep(4, own(-1, 42), t);
  ASSERT_TRUE(r.ended(4, t + 1s));
  EXPECT_EQ(r.killed(4), std::optional<std::int64_t>(42));
  // A start again that failed.
  r.keep(5, own(-1, 43), t);
  ASSERT_TRUE(r.ended(5, t + 1s));
  ASSERT_TRUE(r.next(5));
  EXPECT_EQ(r.failed(5), 43);
  // A chain of no restart, kept only for its group: its one end gives it back.
  r.keep(6, own(0, 44), t);
  due = r.ended(6, t + 1s);
  ASSERT_TRUE(due && !due->again);
  EXPECT_EQ(due->limit, 0);
  EXPECT_EQ(due->release, 44);
  // Not its own (a group it was put in): nothing to give back.
  TaskRequest lent = request(1);
  lent.group = 45;
  r.keep(7, lent, t);
  EXPECT_EQ(r.killed(7), std::optional<std::int64_t>(0));
  due = r.ended(7, t + 1s);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->release, 0);
  EXPECT_EQ(r.size(), 0u);
}

TEST(TaskRestarts, AStartAgainThatWaitsForItsGroupIsNotCountedAndSaidOnce) {
  TaskRestarts r;
  TimePoint t{};
  r.keep(1, request(1), t);
  ASSERT_TRUE(r.ended(1, t + 60s));
  ASSERT_TRUE(r.next(1));
  EXPECT_TRUE(r.later(1)) << "the first wait is said";
  EXPECT_EQ(r.used(1), 0) << "a wait is not a restart";
  ASSERT_TRUE(r.next(1)) << "due again";
  EXPECT_FALSE(r.later(1)) << "said once";
  auto again = r.next(1);
  ASSERT_TRUE(again);
  EXPECT_TRUE(says_restart(*again, 1));
  r.started(1, 2, t + 70s);
  EXPECT_FALSE(r.later(1)) << "running: nothing waits";
  auto due = r.ended(2, t + 80s);
  ASSERT_TRUE(due);
  EXPECT_FALSE(due->again) << "its one restart is used";
}

TEST(TaskRestarts, ATaskOfNoChainIsItselfAndAStartThatFailsEndsTheChain) {
  TaskRestarts r;
  TimePoint t{};
  EXPECT_EQ(r.current(9), 9);
  EXPECT_FALSE(r.killed(9));
  EXPECT_FALSE(r.ended(9, t));
  EXPECT_FALSE(r.next(9));
  r.keep(1, request(3), t);
  ASSERT_TRUE(r.ended(1, t));
  ASSERT_TRUE(r.next(1));
  r.failed(1);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.current(1), 1);
}

}  // namespace
}  // namespace atl::supervisor
