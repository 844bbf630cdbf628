// Log streams: every process atl runs has one, numbered. Rank N's user code is
// stream N, the driver is -1, and rank N's part of debug run K (atlctl run)
// and each task of the driver have streams of their own so nothing mixes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace atl {

inline constexpr std::int32_t kDriverStream = -1;
inline constexpr std::int32_t kRayHeadStream = -2;  // ray mode: Ray's head on the head pod
inline constexpr std::int32_t kMaxRanksPerRun = 65536;

std::int32_t debug_stream(std::int32_t run, std::int32_t rank);

struct DebugStreamId {
  std::int32_t run = 0;
  std::int32_t rank = 0;
};
// The run and rank of a debug stream; nothing for user code and the driver.
std::optional<DebugStreamId> decode_debug_stream(std::int32_t stream);

// A driver's task (the C API's atl_task_start) has a stream of its own, far
// above any rank (kMaxWorldSize is 2^20).
inline constexpr std::int32_t kTaskStreamBase = 1 << 30;
std::int32_t task_stream(std::int32_t task);  // task >= 1
std::optional<std::int32_t> decode_task_stream(std::int32_t stream);

// The head's own log and each worker pod's node agent's have streams too
// (between ranks, below 2^20, and tasks, above 2^30). Not echoed on the head's
// stdout: those lines are on their process's stderr already.
inline constexpr std::int32_t kPodLogStreamBase = 1 << 29;
inline constexpr std::int32_t kHeadLogStream = kPodLogStreamBase - 1;
std::int32_t pod_log_stream(std::int32_t pod_index);  // "<job>-worker-<pod_index>"
std::optional<std::int32_t> decode_pod_log_stream(std::int32_t stream);
bool is_agent_log_stream(std::int32_t stream);  // the head's or a pod agent's

std::string stream_name(std::int32_t stream);    // "rank-3", "driver", "run-2-rank-3"
std::string stream_prefix(std::int32_t stream);  // "[rank 3] ", "[driver] "

}  // namespace atl
