#include "atl/os/growing_pool.hpp"

#include <algorithm>

namespace atl::os {

GrowingPool::GrowingPool(std::size_t max_threads) : max_(std::max<std::size_t>(max_threads, 1)) {}

GrowingPool::~GrowingPool() { shutdown(); }

void GrowingPool::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
    // A thread for it when none is idle (idle ones may already be claimed
    // by queued jobs: compare with the queue's length).
    if (idle_ < jobs_.size() && threads_.size() < max_) {
      threads_.emplace_back([this] { work(); });
      return;
    }
  }
  wake_.notify_one();
}

void GrowingPool::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ++idle_;
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // stopping, nothing left
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void GrowingPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
  }
  wake_.notify_all();
  for (auto& t : threads) t.join();
}

std::size_t GrowingPool::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return threads_.size();
}

}  // namespace atl::os
