// What the actors say about one process (a rank, the driver, a Ray node, a
// debug command, a task): how to start it, that it started, a line on its
// control channel, how it ended. Plain data, so the supervisor's pieces hold
// them without CAF; their inspect() functions are in atl/actors/messages.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "atl/core/log_stream.hpp"

namespace atl {

// One process to run: a rank's entrypoint, the driver, or a debug command.
struct ProcessLaunch {
  StreamId stream;
  std::int32_t attempt = 0;      // user code: which start of it; debug: the run id
  std::string command;           // run with /bin/sh -c
  std::vector<std::string> env;  // "K=V", laid over the node's own environment
  std::string working_dir;       // empty: the node's working directory
  bool control = false;          // give it a control channel (atl's own tools: burn, check)
  std::string scratch_dir;  // absolute; removed once the process's tree is gone (Ray's temp dir)
  // User code's stop warning (--stop-signal): this signal to its group,
  // warn_ms before the SIGTERM of a stop. 0: none.
  std::int32_t warn_signal = 0;
  std::int64_t warn_ms = 0;
  // Nothing of it is worth a grace: a stop ends its whole tree at once (the
  // guard's sweep), without a warning. Ray's nodes: the job's Ray cluster
  // is started anew by each attempt, and Ray drains for 30 s on SIGTERM
  // (`ray stop --force` is how Ray itself stops fastest; this is that for
  // this job's nodes only, never by name).
  bool stop_at_once = false;
};

// How a process ended. `error` is set when it could not even start.
struct ProcessExit {
  StreamId stream;
  std::int32_t attempt = 0;
  std::string pod;
  std::int32_t code = 0;
  std::int32_t signal = 0;
  std::string error;
  // What the process said of its failure, when it said something: the first
  // line of its $TORCHELASTIC_ERROR_FILE (a rank's raised exception).
  std::string reason;
};

// Sent by an Executor once its process runs.
struct ProcessStarted {
  StreamId stream;
  std::int32_t attempt = 0;
  std::string pod;
  std::int32_t pid = 0;
};

// A pod's processes' starts and ends, gathered by its node agent: those that
// came in one turn of its mailbox go to the head as one message (a restart
// at 1,000 x 8 was 16,000 of them through the head's one I/O thread, now
// 2,000). Taken starts first, then ends, each in the order they came: a
// start never waits on an end in the same batch (a new launch waits on the
// head, which has not seen these ends yet).
struct ProcessReports {
  std::string pod;
  std::vector<ProcessStarted> started;
  std::vector<ProcessExit> ended;
  bool empty() const { return started.empty() && ended.empty(); }
};

// A line a process wrote on its control channel, forwarded by its Executor to
// the supervisor (which answers the Executor with control_atom + a line).
struct ProcessNote {
  StreamId stream;
  std::int32_t attempt = 0;
  std::string pod;
  std::string line;
};

// A rank's progress as its node agent sampled it (with its heartbeats), for
// the supervisor's hang watch: counters since the rank's process started.
struct ProgressReport {
  std::int32_t rank = 0;
  std::int32_t attempt = 0;
  std::int64_t lines = 0;      // output lines so far
  std::int64_t steps = 0;      // explicit progress signals so far
  std::int64_t cpu_ticks = 0;  // CPU time of its process tree (clock ticks)
  std::int8_t state = 'S';     // its tree's most telling state: T, D, R or S
  std::int32_t pid = 0;        // the user's own process (the deepest of the tree)
  std::int64_t rss_bytes = 0;  // its tree's resident memory
  std::int64_t io_bytes = 0;   // bytes its tree read and wrote so far (rchar + wchar)
};

// What a pod's agent says of its pod, each taken only from that pod's own
// node (a fenced pod's late words do not count): its heartbeat, with how many
// of the GPUs it declared are still there (-1: it declared none); its ranks'
// progress (with the heartbeats); a GPU fault its NVML watch saw (a critical
// Xid, a lost GPU, a double-bit ECC error, a row remap pending).
struct PodHeartbeat {
  std::string pod;
  std::int32_t gpus_present = -1;
};
struct PodProgress {
  std::string pod;
  std::vector<ProgressReport> reports;
};
struct PodGpuFault {
  std::string pod;
  std::string reason;
  std::int32_t xid = 0;
};

// A rank's stack as its node agent took it for a diagnosis (py-spy or gdb
// output as printed, parsed by the supervisor) with its tree's state.
struct StackReport {
  std::int32_t rank = 0;
  std::int32_t attempt = 0;
  std::int8_t state = 'S';
  std::string tool;   // "py-spy", "gdb", or empty
  std::string text;   // what the tool printed
  std::string error;  // why there is no stack
  std::string gpus;   // its pod's GPU watch: "2 GPUs watched, no fault", a fault, or why none
  // The rank's helpers (DataLoader workers), by pid, and what py-spy printed of each.
  std::vector<std::int32_t> helper_pids;
  std::vector<std::string> helper_texts;
  // Where it stands in its collectives, from torch's flight recorder
  // (core/collectives.hpp's condensed JSON), or why there is no record.
  std::string collectives;
  std::string collectives_error;
  // The flight-recorder hook's own answer as it came (its raw dumps: JSON),
  // up to kMaxRawFlightRecord bytes; empty when there was none. The head
  // keeps it in the attempt's log dir (rank-N.flight-record.json).
  std::string flight_record;
};
inline constexpr std::size_t kMaxRawFlightRecord = std::size_t{4} << 20;

}  // namespace atl
