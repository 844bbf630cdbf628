// The figures burns report, with nccl-tests' definitions: algbw = bytes / time;
// allreduce busbw = algbw * 2(n-1)/n; GEMM TFLOP/s = 2mnk / time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl::gpu {

double algbw_gbps(std::int64_t bytes, double seconds);
double allreduce_busbw_gbps(std::int64_t bytes, double seconds, int ranks);
double gemm_tflops(std::int64_t m, std::int64_t n, std::int64_t k, double seconds);

// What one allreduce size reports. With one rank nothing crosses a link
// (NCCL's one-rank path: in place a no-op, out of place a local copy), so
// no bus bandwidth is given, only why: a figure there would mean nothing.
struct AllreduceFigures {
  bool measured = false;  // busbw and algbw mean something
  double busbw = 0, algbw = 0;
  std::string note;  // why not, when not
};
AllreduceFigures allreduce_figures(std::int64_t bytes, double seconds, int ranks);

// A node's GPUs that lag: figure below `fraction` of the median over the
// node's GPUs (DCGM's targeted stress compares the same way). One GPU, or
// none, lags nothing; a zero figure (nothing measured) is left out.
std::vector<bool> lagging_devices(const std::vector<double>& figures, double fraction = 0.9);
double median_of(std::vector<double> values);
// The median lagging_devices compares with: over the measured (positive)
// figures only.
double measured_median(const std::vector<double>& figures);

// "Round 1: AllReduce Perf(GB/s): Size=512M, BusBW=1.34 GB/s, AlgBW=1.34 GB/s, MasterAddr=<pod>"
std::string format_allreduce_round(int round, std::int64_t bytes, double busbw, double algbw,
                                   const std::string& master);

}  // namespace atl::gpu
