// A thread that runs `tick` every `period` until stopped: the phase
// monitor's deadline checks and NVML's sampling during a check or burn.
// stop() (and the destructor) wakes it at once and joins it; a tick under
// way finishes first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace atl::gpu {

class Ticker {
 public:
  // `at_once`: the first tick right away, then one every period.
  Ticker(std::chrono::milliseconds period, std::function<void()> tick, bool at_once = false);
  ~Ticker() { stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  void stop();

 private:
  std::chrono::milliseconds period_;
  std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace atl::gpu
