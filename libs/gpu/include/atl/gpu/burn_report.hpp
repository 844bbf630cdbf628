// A burn's progress lines as atl-burn prints them, one per GPU per round.
// The dashboard charts the same rounds from the figures atl-burn hands the
// supervisor on its control channel (burn_types.hpp), never from these.
#pragma once

#include <string>

namespace atl::gpu {

struct GemmRound {
  std::string pod;
  int gpu = 0;
  int round = 0;
  double tflops = 0;
  bool verified = false;
};

struct TransferRound {
  std::string pod;
  int gpu = 0;
  int round = 0;
  double h2d_gbps = 0, d2h_gbps = 0, both_gbps = 0, d2d_gbps = 0;
  bool checksum_ok = false;
};

// "<pod> GPU 0 round 3 (2s/20s): gemm 612.345 TFLOP/s, verified"
std::string format_gemm_round(const GemmRound& r, const std::string& elapsed);
// "<pod> GPU 0 round 3 (2s/20s): H2D 51.2 GB/s, D2H 50.9 GB/s, both 80.1 GB/s,
//  D2D 1800.0 GB/s, checksum ok"
std::string format_transfer_round(const TransferRound& r, const std::string& elapsed);

}  // namespace atl::gpu
