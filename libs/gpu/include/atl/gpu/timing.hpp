// How burns and benchmarks time device work, as nccl-tests and gpu-burn do:
// untimed warm-up first (clocks up, caches and NCCL channels set up), then a
// window of timed iterations measured on the device (CUDA events), nothing
// of the host's in it. The loop is pure: the device side is a TimedWork, so
// the rules are tested here with a fake one and run on a GPU with the real one.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::gpu {

struct TimingPlan {
  std::chrono::milliseconds warmup{300};  // untimed work for at least this long (host clock)...
  int warmup_iterations = 1;              // ...and at least this many iterations
  int iterations = 50;                    // then this many timed ones
};

struct TimingSummary {
  int warmup_iterations = 0;
  double warmup_seconds = 0;                      // host time the warm-up took
  int iterations = 0;                             // timed
  double median = 0, mean = 0, min = 0, max = 0;  // seconds per iteration
};

// The device side of a measurement.
class TimedWork {
 public:
  virtual ~TimedWork() = default;
  // Runs `count` iterations untimed and waits for them.
  virtual Status untimed(int count) = 0;
  // Runs `count` iterations in one window and waits; seconds per iteration as
  // the device measured them: one entry per iteration (events around each),
  // or one entry for the window's average (events around all of them).
  virtual Expected<std::vector<double>> timed(int count) = 0;
};

using HostClock = std::function<std::chrono::steady_clock::time_point()>;

// Warm-up in doubling batches until both warm-up limits are met, then one
// timed window of plan.iterations; the summary of what the window measured.
Expected<TimingSummary> measure(TimedWork& work, const TimingPlan& plan,
                                const HostClock& now = std::chrono::steady_clock::now);

// Median, mean, min and max of `seconds` (empty: all zero).
TimingSummary summarize(std::vector<double> seconds);

}  // namespace atl::gpu
