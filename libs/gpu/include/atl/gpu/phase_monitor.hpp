// A watchdog over a burn's phases. NCCL has its own (nccl_allreduce.hpp);
// everything else a GPU does - a cuBLAS call, a kernel, a synchronize - can
// hang on a sick device with no error ever returned. Each GPU thread names
// the phase it enters and how long it may take; a thread of the monitor's
// own finds a phase past its deadline and calls on_stuck, whose default
// prints "FAIL: GPU n stuck in <phase>" and _exit(1)s: a hung CUDA call
// cannot be cancelled, only its process ended, and the node agent then sees
// a failed burn instead of one that never ends.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "atl/gpu/ticker.hpp"

namespace atl::gpu {

class PhaseMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  // gpu: the device (-1: the process as a whole); phase as entered; limit.
  using OnStuck = std::function<void(int gpu, const std::string& phase, std::chrono::milliseconds)>;

  explicit PhaseMonitor(OnStuck on_stuck,
                        std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  ~PhaseMonitor();
  PhaseMonitor(const PhaseMonitor&) = delete;
  PhaseMonitor& operator=(const PhaseMonitor&) = delete;

  // `gpu` enters `phase`, which must end within `limit` (replaces its last phase).
  void enter(int gpu, std::string phase, std::chrono::milliseconds limit);
  void leave(int gpu);

  // enter() now, leave() at scope exit.
  class Scope {
   public:
    Scope(PhaseMonitor* monitor, int gpu, std::string phase, std::chrono::milliseconds limit)
        : monitor_(monitor), gpu_(gpu) {
      if (monitor_) monitor_->enter(gpu, std::move(phase), limit);
    }
    ~Scope() {
      if (monitor_) monitor_->leave(gpu_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseMonitor* monitor_;
    int gpu_;
  };

 private:
  struct Phase {
    std::string name;
    std::chrono::milliseconds limit{};
    Clock::time_point deadline;
  };
  void check();  // each tick: reports (once) every phase past its deadline

  OnStuck on_stuck_;
  std::mutex mu_;
  std::map<int, Phase> phases_;
  Ticker ticker_;  // last: ticks once the rest is set
};

// atl-burn's on_stuck: "<pod> GPU n: FAIL: GPU n stuck in <phase> (limit 60s)"
// (or "<pod>: FAIL: stuck in <phase>" for -1) on stdout, then _exit(1).
PhaseMonitor::OnStuck exit_when_stuck(std::string pod);

}  // namespace atl::gpu
