#include "atl/gpu/timing.hpp"

#include <algorithm>
#include <numeric>

#include "atl/gpu/metrics.hpp"

namespace atl::gpu {

TimingSummary summarize(std::vector<double> seconds) {
  TimingSummary s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  s.iterations = static_cast<int>(n);
  s.median = median_of(seconds);
  s.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(n);
  s.min = seconds.front();
  s.max = seconds.back();
  return s;
}

Expected<TimingSummary> measure(TimedWork& work, const TimingPlan& plan, const HostClock& now) {
  if (plan.iterations < 1) return make_error("timing: at least one timed iteration is needed");
  const auto t0 = now();
  int done = 0;
  int batch = std::max(1, plan.warmup_iterations);
  // Doubling batches: few host round trips for a short GEMM, no long
  // overshoot for a long one.
  while (done < plan.warmup_iterations || now() - t0 < plan.warmup) {
    if (auto s = work.untimed(batch); !s) return Error{s.error()};
    done += batch;
    batch = std::min(batch * 2, 4096);
  }
  const double warmup_seconds = std::chrono::duration<double>(now() - t0).count();
  auto seconds = work.timed(plan.iterations);
  if (!seconds) return Error{seconds.error()};
  if (seconds->empty()) return make_error("timing: the timed window measured nothing");
  TimingSummary s = summarize(*seconds);
  s.iterations = plan.iterations;
  s.warmup_iterations = done;
  s.warmup_seconds = warmup_seconds;
  return s;
}

}  // namespace atl::gpu
