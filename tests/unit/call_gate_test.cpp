#include "atl/core/call_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <utility>
#include <vector>

using atl::CallGate;

TEST(CallGate, OpenGivesPassesAndCountsThem) {
  CallGate gate;
  EXPECT_FALSE(gate.closed());
  EXPECT_EQ(gate.inside(), 0u);
  {
    auto a = gate.enter();
    auto b = gate.enter();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(gate.inside(), 2u);
  }
  EXPECT_EQ(gate.inside(), 0u);
}

TEST(CallGate, AMovedPassIsReleasedOnce) {
  CallGate gate;
  {
    auto a = gate.enter();
    ASSERT_TRUE(a);
    CallGate::Pass moved(std::move(*a));
    a.reset();  // the moved-from pass releases nothing
    EXPECT_EQ(gate.inside(), 1u);
  }
  EXPECT_EQ(gate.inside(), 0u);
}

TEST(CallGate, ClosedRefusesNewPassesButKeepsHeldOnes) {
  CallGate gate;
  auto held = gate.enter();
  ASSERT_TRUE(held);
  EXPECT_TRUE(gate.close());
  EXPECT_FALSE(gate.close()) << "only the first close says so";
  EXPECT_TRUE(gate.closed());
  EXPECT_FALSE(gate.enter());
  EXPECT_EQ(gate.inside(), 1u);
  held.reset();
  EXPECT_EQ(gate.inside(), 0u);
  EXPECT_FALSE(gate.enter()) << "closed for good";
}

TEST(CallGate, WaitIdleReturnsAtOnceWhenNoneIsInside) {
  CallGate gate;
  gate.wait_idle();
  gate.close();
  gate.wait_idle();
  SUCCEED();
}

// The defect it fixes: atl_disconnect freed the client while a call that had
// its answer still read it. wait_idle() must not return while a pass is held.
TEST(CallGate, WaitIdleReturnsOnlyAfterTheLastPassIsReleased) {
  CallGate gate;
  auto first = gate.enter();
  auto second = gate.enter();
  ASSERT_TRUE(first && second);
  gate.close();
  std::atomic<int> released{0};
  std::promise<int> seen;
  auto waiter = std::thread([&] {
    gate.wait_idle();
    seen.set_value(released.load());  // how many passes were released when it returned
  });
  auto result = seen.get_future();
  released = 1;
  first.reset();
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "returned with a pass still held";
  released = 2;
  second.reset();
  EXPECT_EQ(result.get(), 2);
  waiter.join();
}

TEST(CallGate, ManyThreadsEnterAndLeaveWhileItCloses) {
  // Every pass handed out is released before wait_idle returns, and after
  // close() none is handed out: what the waiter sees once idle stays idle.
  CallGate gate;
  std::atomic<bool> stop{false};
  std::atomic<long> granted{0}, refused{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      while (!stop) {
        if (auto pass = gate.enter()) {
          ++granted;
          std::this_thread::yield();
        } else {
          ++refused;
          std::this_thread::yield();
        }
      }
    });
  }
  while (granted < 1000) std::this_thread::yield();
  gate.close();
  gate.wait_idle();
  EXPECT_EQ(gate.inside(), 0u);
  long granted_at_idle = granted;
  while (refused < 1000) std::this_thread::yield();
  EXPECT_EQ(granted.load(), granted_at_idle) << "a pass was handed out after close()";
  EXPECT_EQ(gate.inside(), 0u);
  stop = true;
  for (auto& t : callers) t.join();
}
