// Executor: runs one rank's process (or the driver), streams its output to the
// log sink with flow control, stops it on request, and reports how it ended.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "atl/actors/messages.hpp"
#include "atl/core/unsent_output.hpp"

namespace atl::os {
class Lease;
}

namespace atl {

// What the node agent reads of a running process for the hang watch: its
// guard's pid once it runs (0 before), and the lines of output it wrote so
// far. Written by the executor and its pump thread: atomics.
struct ProcessMeter {
  std::atomic<std::int32_t> pid{0};
  std::atomic<std::int64_t> lines{0};
  // $ATL_PROGRESS_FILE of the rank: a file it may touch to say "progress"
  // (the agent counts the changes of its mtime). Set before the spawn.
  std::string progress_file;
  // $TORCHELASTIC_ERROR_FILE of the rank (torchelastic's @record writes its
  // exception there): read when the rank fails, for the failure's reason.
  // The node's path unless the job's env names its own (then not removed).
  std::string error_file;
  bool error_file_ours = true;
  // The rank's flight-recorder directory (os/flight_recorder.hpp): its hook,
  // first on PYTHONPATH. Emptied when the job turns it off
  // (ATL_FLIGHT_RECORDER=0) or it could not be made.
  std::string flight_recorder_dir;
};

// A file of one process's own under $TMPDIR (else /tmp), named for its pod,
// stream and attempt: `<prefix><pod>-<stream>-<attempt><suffix>` (its
// progress file, its $TORCHELASTIC_ERROR_FILE, its flight-recorder dir).
std::string process_tmp_path(const std::string& prefix, const std::string& pod,
                             const ProcessLaunch& launch, const std::string& suffix = "");

// Messages it takes: (stop_atom, int64 grace_ms) -> SIGTERM to the process
// group, SIGKILL after the grace. It sends one ProcessExit to `report_to`, after
// the sink acknowledged every line, then quits. It sends ProcessStarted (with the
// pid) to `report_to` as soon as the process runs.
// With a `lease` (a worker node's), the process's guard kills its tree when the
// lease runs out: the node froze or lost its head.
// With a `meter`, the process's pid and output lines are kept in it.
// With `unsent` (a worker pod's), output the head never acknowledged is kept
// there once (sink_lost_atom) the node lost its head, for its rejoin.
caf::actor spawn_executor(caf::actor_system& sys, ProcessLaunch launch, std::string pod,
                          caf::actor sink, caf::actor report_to,
                          std::shared_ptr<os::Lease> lease = nullptr,
                          std::shared_ptr<ProcessMeter> meter = nullptr,
                          std::shared_ptr<UnsentOutput> unsent = nullptr);

}  // namespace atl
