#include "atl/os/termination_signals.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

namespace atl::os {

namespace {

// SIGUSR2 only wakes the waiting thread when it is time to stop.
constexpr int kWakeSignal = SIGUSR2;

sigset_t waited_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, kWakeSignal);
  return set;
}

}  // namespace

void TerminationSignals::block_in_this_thread() {
  sigset_t set = waited_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

TerminationSignals::TerminationSignals(std::function<void(int)> on_signal) {
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    sigset_t set = waited_set();
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (stop_.load()) return;
      if (sig != kWakeSignal) on_signal(sig);
    }
  });
}

TerminationSignals::~TerminationSignals() {
  stop_ = true;
  pthread_kill(thread_.native_handle(), kWakeSignal);
  thread_.join();
  // From now on a SIGINT/SIGTERM kills the process the default way, instead of
  // being blocked with nobody waiting for it.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

ShutdownWatchdog::ShutdownWatchdog(std::chrono::milliseconds limit, int exit_code) {
  thread_ = std::thread([this, limit, exit_code] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
      std::fprintf(stderr, "shutdown took longer than %lld ms: exiting with %d anyway\n",
                   static_cast<long long>(limit.count()), exit_code);
      std::fflush(stdout);
      _exit(exit_code);
    }
  });
}

ShutdownWatchdog::~ShutdownWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_one();
  thread_.join();
}

}  // namespace atl::os
