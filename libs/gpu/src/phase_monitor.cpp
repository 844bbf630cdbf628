#include "atl/gpu/phase_monitor.hpp"

#include <unistd.h>

#include <cstdio>

namespace atl::gpu {

PhaseMonitor::PhaseMonitor(OnStuck on_stuck, std::chrono::milliseconds poll)
    : on_stuck_(std::move(on_stuck)), ticker_(poll, [this] { check(); }) {}

PhaseMonitor::~PhaseMonitor() { ticker_.stop(); }

void PhaseMonitor::enter(int gpu, std::string phase, std::chrono::milliseconds limit) {
  std::lock_guard<std::mutex> lock(mu_);
  phases_[gpu] = Phase{std::move(phase), limit, Clock::now() + limit};
}

void PhaseMonitor::leave(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  phases_.erase(gpu);
}

void PhaseMonitor::check() {
  std::map<int, Phase> stuck;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    for (auto it = phases_.begin(); it != phases_.end();) {
      if (now < it->second.deadline) {
        ++it;
      } else {
        stuck.insert(*it);
        it = phases_.erase(it);
      }
    }
  }
  // Outside the lock: the default action never returns.
  for (const auto& [gpu, phase] : stuck) on_stuck_(gpu, phase.name, phase.limit);
}

PhaseMonitor::OnStuck exit_when_stuck(std::string pod) {
  return
      [pod = std::move(pod)](int gpu, const std::string& phase, std::chrono::milliseconds limit) {
        const long long secs = static_cast<long long>(limit.count() / 1000);
        if (gpu >= 0)
          std::printf("%s GPU %d: FAIL: GPU %d stuck in %s (no progress within %llds)\n",
                      pod.c_str(), gpu, gpu, phase.c_str(), secs);
        else
          std::printf("%s: FAIL: stuck in %s (not done within %llds)\n", pod.c_str(), phase.c_str(),
                      secs);
        std::fflush(stdout);
        ::_exit(1);  // a hung CUDA call cannot be joined or unwound
      };
}

}  // namespace atl::gpu
