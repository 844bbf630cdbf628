// pump_output: moves a child's output, in whole-line chunks, to a sink that may
// block for flow control, until the child has exited and its pipe is drained.
// Runs on a thread of its own; never on an actor scheduler thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

#include "atl/os/child_process.hpp"
#include "atl/os/line_chunker.hpp"
#include "atl/os/output_batching.hpp"

namespace atl::os {

struct PumpOptions {
  std::size_t chunk_bytes = 256 * 1024;
  // After the main process exited, how long to wait for the pipe to close
  // (background children may hold it) before killing the group.
  std::chrono::milliseconds drain_timeout{2000};
  // An unfinished line (tqdm's '\r' redraws) is sent as it is after this long.
  std::chrono::milliseconds partial_flush{1000};
  // Lines after a quiet spell go at once; a fast writer's are gathered into
  // chunks (OutputBatching; its chunk_bytes is chunk_bytes above).
  std::chrono::microseconds batch_quiet{2000};
  std::chrono::microseconds batch_pause{200};
  std::chrono::microseconds batch_hold{5000};
};

// Delivers one chunk; blocks while the receiver has no credit. Returns false
// when the receiver is gone: the pump then keeps draining but drops output.
using ChunkSink = std::function<bool(LineChunk&&)>;

// Returns the exit status. When `cancel` becomes true the group is killed and
// the call returns promptly.
ExitStatus pump_output(ChildProcess& child, const ChunkSink& sink, const std::atomic<bool>& cancel,
                       const PumpOptions& options = {});

}  // namespace atl::os
