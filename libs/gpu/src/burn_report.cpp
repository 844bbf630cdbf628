#include "atl/gpu/burn_report.hpp"

#include <cstdio>

namespace atl::gpu {

std::string format_gemm_round(const GemmRound& r, const std::string& elapsed) {
  char line[512];
  std::snprintf(line, sizeof line, "%s GPU %d round %d (%s): gemm %.3f TFLOP/s, %s", r.pod.c_str(),
                r.gpu, r.round, elapsed.c_str(), r.tflops,
                r.verified ? "verified" : "WRONG RESULTS");
  return line;
}

std::string format_transfer_round(const TransferRound& r, const std::string& elapsed) {
  char line[512];
  std::snprintf(line, sizeof line,
                "%s GPU %d round %d (%s): H2D %.1f GB/s, D2H %.1f GB/s, both %.1f GB/s, D2D %.1f "
                "GB/s, %s",
                r.pod.c_str(), r.gpu, r.round, elapsed.c_str(), r.h2d_gbps, r.d2h_gbps, r.both_gbps,
                r.d2d_gbps, r.checksum_ok ? "checksum ok" : "CHECKSUM MISMATCH");
  return line;
}

}  // namespace atl::gpu
