// TerminationSignals: turns SIGINT/SIGTERM into a callback on a thread of its
// own, so actor code never runs inside a signal handler. ShutdownWatchdog
// bounds how long a process may take to end once its work is done.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace atl::os {

class TerminationSignals {
 public:
  // Blocks SIGINT, SIGTERM (and ignores SIGPIPE) in the calling thread; call
  // before any other thread starts so that all threads inherit the mask.
  static void block_in_this_thread();

  explicit TerminationSignals(std::function<void(int)> on_signal);
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ShutdownWatchdog: once the outcome is known, ending the process must not hang
// (e.g. on an actor that never finishes): after `limit`, _exit(exit_code).
class ShutdownWatchdog {
 public:
  ShutdownWatchdog(std::chrono::milliseconds limit, int exit_code);
  ~ShutdownWatchdog();
  ShutdownWatchdog(const ShutdownWatchdog&) = delete;
  ShutdownWatchdog& operator=(const ShutdownWatchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace atl::os
