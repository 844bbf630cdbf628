// The figures burns report, with nccl-tests' definitions: algbw = bytes / time;
// allreduce busbw = algbw * 2(n-1)/n; GEMM TFLOP/s = 2mnk / time.
#pragma once

#include <cstdint>
#include <string>

namespace atl::gpu {

double algbw_gbps(std::int64_t bytes, double seconds);
double allreduce_busbw_gbps(std::int64_t bytes, double seconds, int ranks);
double gemm_tflops(std::int64_t m, std::int64_t n, std::int64_t k, double seconds);

// "Round 1: AllReduce Perf(GB/s): Size=512M, BusBW=1.34 GB/s, AlgBW=1.34 GB/s, MasterAddr=<pod>"
std::string format_allreduce_round(int round, std::int64_t bytes, double busbw, double algbw,
                                   const std::string& master);

}  // namespace atl::gpu
