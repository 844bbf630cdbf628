// The HTTP servers' pool: threads start only when work needs them, never past
// the limit, and everything queued runs before shutdown returns.
#include "atl/os/growing_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

using atl::os::GrowingPool;
using namespace std::chrono_literals;

namespace {

// Jobs that block until released, counting how many run at once.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> running{0}, peak{0}, done{0};

  std::function<void()> job() {
    return [this] {
      int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [this] { return open; });
      --running;
      ++done;
    };
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
  bool wait_running(int n) {
    for (int i = 0; i < 2000 && running.load() < n; ++i) std::this_thread::sleep_for(5ms);
    return running.load() >= n;
  }
};

}  // namespace

TEST(GrowingPool, StartsNoThreadUntilThereIsWork) {
  GrowingPool pool(8);
  EXPECT_EQ(pool.threads(), 0u);
  std::promise<void> ran;
  pool.enqueue([&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(pool.threads(), 1u);
}

TEST(GrowingPool, AnIdleThreadIsReused) {
  GrowingPool pool(8);
  for (int i = 0; i < 20; ++i) {
    std::promise<void> ran;
    pool.enqueue([&] { ran.set_value(); });
    ASSERT_EQ(ran.get_future().wait_for(30s), std::future_status::ready);
    // The thread goes back to waiting right after the job: give it the time.
    for (int j = 0; j < 200 && pool.threads() > 1; ++j) std::this_thread::sleep_for(1ms);
  }
  EXPECT_LE(pool.threads(), 2u);
}

TEST(GrowingPool, GrowsForBlockedJobsUpToTheLimitThenQueues) {
  GrowingPool pool(4);
  Gate gate;
  for (int i = 0; i < 10; ++i) pool.enqueue(gate.job());
  ASSERT_TRUE(gate.wait_running(4));
  EXPECT_EQ(pool.threads(), 4u);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(gate.peak.load(), 4);  // the other six wait their turn
  gate.release();
  for (int i = 0; i < 2000 && gate.done.load() < 10; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(gate.done.load(), 10);
}

TEST(GrowingPool, ShutdownRunsWhatIsQueuedThenDropsNewWork) {
  std::atomic<int> ran{0};
  {
    GrowingPool pool(1);
    Gate gate;
    pool.enqueue(gate.job());
    for (int i = 0; i < 5; ++i) pool.enqueue([&] { ++ran; });
    ASSERT_TRUE(gate.wait_running(1));
    std::thread releaser([&] {
      std::this_thread::sleep_for(50ms);
      gate.release();
    });
    pool.shutdown();
    releaser.join();
    EXPECT_EQ(ran.load(), 5);
    pool.enqueue([&] { ran += 100; });  // after shutdown: dropped
  }
  EXPECT_EQ(ran.load(), 5);
}
