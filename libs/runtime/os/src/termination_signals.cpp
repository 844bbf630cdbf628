#include "atl/os/termination_signals.hpp"

#include <signal.h>
#include <time.h>

namespace atl::os {

namespace {
sigset_t termination_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void TerminationSignals::block_in_this_thread() {
  sigset_t set = termination_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

TerminationSignals::TerminationSignals(std::function<void(int)> on_signal) {
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    sigset_t set = termination_set();
    timespec tick{0, 200 * 1000 * 1000};
    while (!stop_.load()) {
      int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig > 0) on_signal(sig);
    }
  });
}

TerminationSignals::~TerminationSignals() {
  stop_ = true;
  thread_.join();
}

}  // namespace atl::os
