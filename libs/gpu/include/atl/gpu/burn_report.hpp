// A burn's progress lines, written by atl-burn and read back by the head's
// dashboard for its charts (BusBW per size per round, TFLOP/s and GB/s per
// GPU per round). Formatter and parser live together so they cannot drift;
// a line that is not one of these is not part of the report (user output,
// verdicts, warnings), never an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

struct AllreduceRound {
  int round = 0;
  std::string size;  // as printed: "8M", "2G", "1000"
  double busbw_gbps = 0, algbw_gbps = 0;
  std::string master;
};

// "<pod> GPU 0 round 3 (2s/20s): gemm 612.345 TFLOP/s, verified"
std::string format_gemm_round(const GemmRound& r, const std::string& elapsed);
// "<pod> GPU 0 round 3 (2s/20s): H2D 51.2 GB/s, D2H 50.9 GB/s, both 80.1 GB/s,
//  D2D 1800.0 GB/s, checksum ok"
std::string format_transfer_round(const TransferRound& r, const std::string& elapsed);

struct BurnReport {
  std::vector<GemmRound> gemm;
  std::vector<TransferRound> transfer;
  std::vector<AllreduceRound> allreduce;
  bool empty() const { return gemm.empty() && transfer.empty() && allreduce.empty(); }
};

// Every recognised line of `text` (lines end with '\n'; a last one without is
// read too), in order.
BurnReport parse_burn_report(std::string_view text);

// {"gemm": [{"pod","gpu","round","tflops","verified"}...], "transfer": [...],
//  "allreduce": [{"round","size","busbw_gbps","algbw_gbps","master"}...]}
std::string burn_report_json(const BurnReport& report);

}  // namespace atl::gpu
