#include "atl/core/log_stream.hpp"

namespace atl {

// Debug streams are below -1: -2 - (run * kMaxRanksPerRun + rank), run >= 1.
std::int32_t debug_stream(std::int32_t run, std::int32_t rank) {
  return -2 - (run * kMaxRanksPerRun + rank);
}

std::optional<DebugStreamId> decode_debug_stream(std::int32_t stream) {
  if (stream > debug_stream(1, 0)) return std::nullopt;  // runs start at 1
  std::int32_t code = -2 - stream;
  return DebugStreamId{code / kMaxRanksPerRun, code % kMaxRanksPerRun};
}

std::string stream_name(std::int32_t stream) {
  if (stream == kDriverStream) return "driver";
  if (stream == kRayHeadStream) return "ray-head";
  if (auto debug = decode_debug_stream(stream)) {
    return "run-" + std::to_string(debug->run) + "-rank-" + std::to_string(debug->rank);
  }
  return "rank-" + std::to_string(stream);
}

std::string stream_prefix(std::int32_t stream) {
  if (stream == kDriverStream) return "[driver] ";
  if (stream == kRayHeadStream) return "[ray-head] ";
  if (auto debug = decode_debug_stream(stream))
    return "[rank " + std::to_string(debug->rank) + "] ";
  return "[rank " + std::to_string(stream) + "] ";
}

}  // namespace atl
