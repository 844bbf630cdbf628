// A thread pool that starts threads only as work needs them, up to a limit
// (past it, work waits in order), and keeps the ones it started. The head's
// HTTP servers run on it: a head nobody browses has no idle threads, one
// with a hundred log followers has a hundred busy ones.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace atl::os {

class GrowingPool {
 public:
  explicit GrowingPool(std::size_t max_threads);
  ~GrowingPool();  // shutdown()
  GrowingPool(const GrowingPool&) = delete;
  GrowingPool& operator=(const GrowingPool&) = delete;

  void enqueue(std::function<void()> job);
  // Runs what is queued, then joins every thread; later jobs are dropped.
  void shutdown();

  std::size_t threads() const;  // started so far

 private:
  void work();

  const std::size_t max_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace atl::os
