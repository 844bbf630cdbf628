// LogSink: the head's writer of rank output. Appends each stream's lines to
// <logs_dir>/attempt-K/<stream>.log (<stream>.log links to the current
// attempt's: user code's through <logs_dir>/current -> attempt-K), echoes
// them on stdout as "[rank N] line", acks each chunk (the executors' flow
// control), and serves reads for `atlctl logs`.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <string>

namespace atl {

// Blocking file and stdout writes happen on a thread the actor owns. Messages:
//   (log_atom, StreamId stream, string lines, int32 count) -> ack_atom to sender once written
//   (log_atom, StreamId stream, int32 attempt, int64 offset, string lines, int32 count): the
//                            same, from the given attempt of user code (earlier attempts'
//                            chunks go to their files), `lines` beginning at `offset` of its
//                            process's output: only what the attempt's file lacks is written
//                            and echoed (a chunk a cut connection delivers late, after the
//                            pod's kept copy, is not written twice)
//   sink_order::Print{line}: a line on stdout and head.log
//   sink_order::NewAttempt{k}: from now on <logs_dir>/attempt-k/<stream>.log, with
//                            <logs_dir>/<stream>.log a link to it (nothing truncated):
//                            current -> attempt-k at once, so a rank's log reads empty
//                            until its first line of attempt k
//   sink_order::KeepFile, StreamsEnded, ForgetStreams (atl/core/orders.hpp): a file of an
//                            attempt's dir; runs' or tasks' series folded; their files gone
// The LogReader (spawn_log_reader, a thread of its own) answers reads of the files:
//   (LogRead) -> LogChunks (atl/core/requests.hpp): from each stream's offset (the streams
//        that have bytes, in order, up to max_bytes in all: atlctl run follows thousands of
//        ranks in one round trip per poll), the last lines of one, or where each stream's
//        lines since a time start; from attempt-K's files (0: the current), each line
//        prefixed with its time ("2026-12-03T16:45:31.188Z ") when stamped; offsets stay
//        the file's
// Each log has a .times file beside it (core/log_times.hpp; made at its second record, the
// first timed by the log file's birth): the bytes stay the rank's.
caf::actor spawn_log_sink(caf::actor_system& sys, std::string logs_dir, bool echo);
caf::actor spawn_log_reader(caf::actor_system& sys, std::string logs_dir);

}  // namespace atl
