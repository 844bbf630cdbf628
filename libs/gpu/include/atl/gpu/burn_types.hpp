// What atlctl burn and check ask for: burn and check types, burn sizes as the
// seed writes them ("512M", "1G": powers of 1024, like nccl-tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::gpu {

enum class BurnType { gemm, transfer, local, global, batch };
enum class CheckType { gpu, allreduce, all };

Expected<BurnType> parse_burn_type(std::string_view text);
Expected<CheckType> parse_check_type(std::string_view text);
std::string_view to_string(BurnType type);
std::string_view to_string(CheckType type);

// "512M" -> 512 MiB, "1G" -> 1 GiB, "64K", plain bytes.
Expected<std::int64_t> parse_burn_size(std::string_view text);
// The seed's size label: 536870912 -> "512M", 1073741824 -> "1G".
std::string format_burn_size(std::int64_t bytes);

// A figure atl-burn hands the supervisor on its control channel, for the
// head's metrics and the dashboard's charts: "figure <gpu> <metric> <value>
// [<size>] [round=<k>]" (size: allreduce's "512M"...; round k of the burn,
// none for the whole burn's average). Metrics: gemm_tflops, h2d_gbps,
// d2h_gbps, allreduce_busbw_gbps.
struct BurnFigure {
  int gpu = 0;
  std::string metric;
  double value = 0;
  std::string size;  // allreduce only
  int round = 0;     // 1..kMaxFigureRound: that round's; 0: the whole burn's
};
inline constexpr int kMaxFigureRound = 1000000;
inline constexpr std::string_view kFigureVerb = "figure ";
std::string encode_figure(const BurnFigure& figure);        // with the verb
Expected<BurnFigure> decode_figure(std::string_view line);  // after the verb

// nccl-tests' -b/-e/-f sweep: begin, begin*factor, ... up to end (inclusive
// when reached). Refused: begin below 4 bytes (one float), end below begin,
// factor below 2, more than 64 sizes.
Expected<std::vector<std::int64_t>> sweep_sizes(std::int64_t begin, std::int64_t end, int factor);

// --sizes of atlctl burn and atl-burn: a list ("512M,1G") or a sweep
// "BEGIN:END[:FACTOR]" ("8M:1G:2", nccl-tests' -b/-e/-f; factor 2 when
// left out). Every size 4 bytes to 512G, at most 64 sizes.
Expected<std::vector<std::int64_t>> parse_size_spec(std::string_view text);
// "512M,1G,2G": the form atl-burn --sizes takes (and a shell passes as is).
std::string format_size_list(const std::vector<std::int64_t>& sizes);

// How long the supervisor lets one node's burn or check run before it stops
// it (atl-burn's own phase monitor should have ended it long before): per
// step, its duration, atl-burn's watchdog timeout once per phase it can
// wait in, and a grace; allreduce steps also their rendezvous wait.
std::chrono::milliseconds node_tool_deadline(const std::vector<std::string_view>& steps,
                                             std::chrono::milliseconds duration, int sizes);

// The seed's allreduce sizes, dropping those that do not fit in `max_bytes`.
std::vector<std::int64_t> allreduce_sizes(std::int64_t max_bytes);

}  // namespace atl::gpu
