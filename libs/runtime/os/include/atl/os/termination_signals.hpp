// TerminationSignals: turns SIGINT/SIGTERM into a callback on a thread of its
// own, so actor code never runs inside a signal handler.
#pragma once

#include <atomic>
#include <functional>
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

}  // namespace atl::os
