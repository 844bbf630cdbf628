// A burn's progress lines, written by atl-burn and read back by the head's
// dashboard for its charts (BusBW per size per round, TFLOP/s and GB/s per
// GPU per round). Formatter and parser live together so they cannot drift;
// a line that is not one of these is not part of the report (user output,
// verdicts, warnings), never an error.
#pragma once

#include <cstddef>
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

// A report read while its log grows: each feed parses only the lines it
// completes (a line still being written waits for its '\n'), so a dashboard
// polling a running burn pays for what was written since its last poll, not
// for the whole log again. Fed the whole of a text that ends in '\n', it
// holds what parse_burn_report(text) returns.
class BurnReportReader {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;  // longer: not a report line

  // The log's next bytes, from where the last feed ended.
  void feed(std::string_view bytes);
  const BurnReport& report() const { return report_; }
  std::int64_t offset() const { return offset_; }  // bytes fed so far

 private:
  BurnReport report_;
  std::string partial_;    // the start of a line not ended yet
  bool skipping_ = false;  // inside a line longer than kMaxLine
  std::int64_t offset_ = 0;
};

// {"gemm": [{"pod","gpu","round","tflops","verified"}...], "transfer": [...],
//  "allreduce": [{"round","size","busbw_gbps","algbw_gbps","master"}...]}
std::string burn_report_json(const BurnReport& report);

}  // namespace atl::gpu
