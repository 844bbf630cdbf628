// Log streams: every process atl runs has one, named by what it is (a kind)
// and which one (run, rank): rank N's user code, the driver, Ray's head, rank
// N of debug run K (atlctl run/check/burn), a driver's task, the head's own log
// and each worker pod's agent log. Nothing is packed into one integer, so no
// world size or run count can make two streams collide.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace atl {

enum class StreamKind : std::uint8_t {
  rank = 0,      // user code: rank `rank`
  driver = 1,    // user code: the driver on the head pod
  ray_head = 2,  // ray mode: `ray start --head` on the head pod
  run = 3,       // debug run `run` (atlctl run/check/burn), its rank `rank`
  task = 4,      // the driver's task `run` (the C API's atl_task_start)
  head_log = 5,  // the head's own log lines
  pod_log = 6,   // worker pod `rank`'s node agent's log lines ("<job>-worker-<rank>")
};

struct StreamId {
  StreamKind kind = StreamKind::rank;
  std::int32_t run = 0;   // run: the debug run (>= 1); task: the task (>= 1); else 0
  std::int32_t rank = 0;  // rank, run: the rank; pod_log: the pod's index; else 0

  static StreamId of_rank(std::int32_t rank) { return {StreamKind::rank, 0, rank}; }
  static StreamId driver() { return {StreamKind::driver, 0, 0}; }
  static StreamId ray_head() { return {StreamKind::ray_head, 0, 0}; }
  static StreamId of_run(std::int32_t run, std::int32_t rank) {
    return {StreamKind::run, run, rank};
  }
  static StreamId of_task(std::int32_t task) { return {StreamKind::task, task, 0}; }
  static StreamId head_log() { return {StreamKind::head_log, 0, 0}; }
  static StreamId pod_log(std::int32_t pod_index) { return {StreamKind::pod_log, 0, pod_index}; }

  // User code: ranks, the driver and Ray's head (what the job's attempts restart).
  bool is_user_code() const {
    return kind == StreamKind::rank || kind == StreamKind::driver || kind == StreamKind::ray_head;
  }
  // A debug run's or a task's streams, all of them (what stop addresses).
  bool in_run_of(const StreamId& other) const {
    return (kind == StreamKind::run || kind == StreamKind::task) && kind == other.kind &&
           run == other.run;
  }
  // Log lines of atl's own processes (not echoed: they are on their stderr already).
  bool is_agent_log() const { return kind == StreamKind::head_log || kind == StreamKind::pod_log; }

  friend bool operator==(const StreamId& a, const StreamId& b) {
    return a.kind == b.kind && a.run == b.run && a.rank == b.rank;
  }
  friend bool operator!=(const StreamId& a, const StreamId& b) { return !(a == b); }
  friend bool operator<(const StreamId& a, const StreamId& b) {
    return std::tie(a.kind, a.run, a.rank) < std::tie(b.kind, b.run, b.rank);
  }
};

// User code's rank table is keyed by rank, with two keys below 0 for the
// processes that are not ranks: the driver and Ray's head.
inline constexpr std::int32_t kDriverStream = -1;
inline constexpr std::int32_t kRayHeadStream = -2;
StreamId user_code_stream(std::int32_t key);  // key: a rank, kDriverStream or kRayHeadStream
// The user-code key of `id` (nothing for other kinds).
std::optional<std::int32_t> user_code_key(const StreamId& id);

// "rank-3", "driver", "ray-head", "run-2-rank-3", "task-7", "head", "pod-worker-1":
// the file name (without ".log") and the name in status, the API and atlctl.
std::string stream_name(const StreamId& id);
// The inverse of stream_name; nothing for anything else (negative numbers,
// leading zeros, trailing bytes, numbers past int32).
std::optional<StreamId> parse_stream_name(const std::string& name);
std::string stream_prefix(const StreamId& id);  // "[rank 3] ", "[driver] ", "[task 7] "

}  // namespace atl
