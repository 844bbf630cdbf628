// A stand-in for an Executor, for `workernode --simulate K --fake-ranks`
// (scale tests of the head): no process, but the same messages an Executor
// sends (ProcessStarted, the rank's lines to the log sink with its ack, ProcessExit)
// and takes (stop_atom), so the head cannot tell it from a rank.
//
// What the stand-in "runs", by the command's first word:
//   true, exit 0, : -> exits 0 at once          false, exit N -> exits 1 / N at once
//   echo WORDS...   -> prints WORDS, exits 0     seq N -> prints 1..N, a line each,
//                      in chunks of ~64 KiB, each sent once the sink acked the
//                      one before (as an Executor's pump), then exits 0
//   anything else   -> prints one line naming the command and runs until
//                      stopped (SIGTERM, 15)
// Its pid is 0 (there is none). Not simulated: the process tree, its guard,
// the control channel (burn/check), environment, working dir.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "atl/actors/messages.hpp"

namespace atl {

struct FakeRun {
  std::optional<int> exit_code;  // nothing: runs until stopped
  std::string output;            // lines it prints first ("" or ending in '\n')
  std::int64_t seq_to = 0;       // then the lines 1..seq_to (seq N)
};
// Pure: what a stand-in does for `command`.
FakeRun fake_run_of(const std::string& command);

caf::actor spawn_fake_executor(caf::actor_system& sys, ProcessLaunch launch, std::string pod,
                               caf::actor sink, caf::actor report_to);

}  // namespace atl
