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

std::int32_t task_stream(std::int32_t task) { return kTaskStreamBase + task; }

std::optional<std::int32_t> decode_task_stream(std::int32_t stream) {
  if (stream <= kTaskStreamBase) return std::nullopt;  // tasks start at 1
  return stream - kTaskStreamBase;
}

std::int32_t pod_log_stream(std::int32_t pod_index) { return kPodLogStreamBase + pod_index; }

std::optional<std::int32_t> decode_pod_log_stream(std::int32_t stream) {
  if (stream < kPodLogStreamBase || stream >= kTaskStreamBase) return std::nullopt;
  return stream - kPodLogStreamBase;
}

bool is_agent_log_stream(std::int32_t stream) {
  return stream == kHeadLogStream || decode_pod_log_stream(stream).has_value();
}

std::string stream_name(std::int32_t stream) {
  if (stream == kDriverStream) return "driver";
  if (stream == kHeadLogStream) return "head";
  if (auto pod = decode_pod_log_stream(stream)) return "pod-worker-" + std::to_string(*pod);
  if (auto task = decode_task_stream(stream)) return "task-" + std::to_string(*task);
  if (stream == kRayHeadStream) return "ray-head";
  if (auto debug = decode_debug_stream(stream)) {
    return "run-" + std::to_string(debug->run) + "-rank-" + std::to_string(debug->rank);
  }
  return "rank-" + std::to_string(stream);
}

std::string stream_prefix(std::int32_t stream) {
  if (stream == kDriverStream) return "[driver] ";
  if (stream == kHeadLogStream) return "[head] ";
  if (auto pod = decode_pod_log_stream(stream)) return "[pod worker-" + std::to_string(*pod) + "] ";
  if (auto task = decode_task_stream(stream)) return "[task " + std::to_string(*task) + "] ";
  if (stream == kRayHeadStream) return "[ray-head] ";
  if (auto debug = decode_debug_stream(stream))
    return "[rank " + std::to_string(debug->rank) + "] ";
  return "[rank " + std::to_string(stream) + "] ";
}

}  // namespace atl
