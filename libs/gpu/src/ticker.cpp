#include "atl/gpu/ticker.hpp"

namespace atl::gpu {

Ticker::Ticker(std::chrono::milliseconds period, std::function<void()> tick, bool at_once)
    : period_(period), tick_(std::move(tick)), thread_([this, at_once] {
        if (at_once) tick_();
        std::unique_lock<std::mutex> lock(mu_);
        while (!cv_.wait_for(lock, period_, [this] { return stopping_; })) {
          lock.unlock();
          tick_();
          lock.lock();
        }
      }) {}

void Ticker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace atl::gpu
