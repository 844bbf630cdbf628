// atl-burn gemm and transfer: rounds until the duration is over, every round
// verified, a progress line per round and a verdict line per GPU.
#include <cstdio>

#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/metrics.hpp"
#include "burn.hpp"

namespace atl::burn {

std::string elapsed(Clock::time_point t0, Millis total) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0).count();
  return std::to_string(secs) + "s/" + format_duration(total);
}

// GEMM rounds until the duration is over; every round verified.
int burn_gemm(gpu::Backend& backend, const Options& o) {
  gpu::GemmConfig config;
  config.size = o.size ? o.size : (backend.name() == "cuda" ? 8192 : 512);
  config.bf16 = !o.fp32;
  config.allow_tf32 = o.tf32;
  int failed = 0;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    auto t0 = Clock::now();
    int rounds = 0;
    double sum = 0;
    std::string problem;
    while (problem.empty() && (rounds == 0 || Clock::now() - t0 < o.duration)) {
      auto r = backend.gemm(dev, config);
      ++rounds;
      if (!r) {
        problem = r.error();
        break;
      }
      sum += r->tflops;
      std::printf("%s GPU %d round %d (%s): gemm %.3f TFLOP/s, %s\n", o.pod.c_str(), dev, rounds,
                  elapsed(t0, o.duration).c_str(), r->tflops,
                  r->ok() ? "verified" : "WRONG RESULTS");
      std::fflush(stdout);
      if (!r->ok()) {
        problem = std::to_string(r->differing) + " elements differ between identical GEMMs, " +
                  std::to_string(r->nans) + " NaN, " + std::to_string(r->wrong) + " wrong";
      }
    }
    std::printf("%s GPU %d (%s): gemm %.3f TFLOP/s average over %d rounds: %s%s\n", o.pod.c_str(),
                dev, backend.name().c_str(), rounds ? sum / rounds : 0.0, rounds,
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    failed += !problem.empty();
  }
  return failed ? 1 : 0;
}

int burn_transfer(gpu::Backend& backend, const Options& o) {
  int failed = 0;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    auto t0 = Clock::now();
    int rounds = 0;
    double h2d = 0, d2h = 0, both = 0;
    std::string problem;
    while (problem.empty() && (rounds == 0 || Clock::now() - t0 < o.duration)) {
      auto r = backend.transfer(dev, o.bytes);
      ++rounds;
      if (!r) {
        problem = r.error();
        break;
      }
      h2d += r->h2d_gbps;
      d2h += r->d2h_gbps;
      both += r->bidir_gbps;
      std::printf(
          "%s GPU %d round %d (%s): H2D %.1f GB/s, D2H %.1f GB/s, both %.1f GB/s, D2D %.1f "
          "GB/s, %s\n",
          o.pod.c_str(), dev, rounds, elapsed(t0, o.duration).c_str(), r->h2d_gbps, r->d2h_gbps,
          r->bidir_gbps, r->d2d_gbps, r->checksum_ok ? "checksum ok" : "CHECKSUM MISMATCH");
      std::fflush(stdout);
      if (!r->checksum_ok) problem = "data changed on the round trip";
    }
    std::printf("%s GPU %d (%s): transfer %s H2D %.1f GB/s, D2H %.1f GB/s over %d rounds: %s%s\n",
                o.pod.c_str(), dev, backend.name().c_str(), gpu::format_burn_size(o.bytes).c_str(),
                rounds ? h2d / rounds : 0.0, rounds ? d2h / rounds : 0.0, rounds,
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    failed += !problem.empty();
  }
  return failed ? 1 : 0;
}

}  // namespace atl::burn
