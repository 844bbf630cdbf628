// PyTorch's flight recorder, turned on in a rank and read on demand.
//
// torch (2.5+) records every collective of every process group in a ring
// buffer when TORCH_FR_BUFFER_SIZE (NCCL before 2.7: TORCH_NCCL_TRACE_BUFFER_SIZE)
// is set, and dumps it from inside the process (`_dump_fr_trace_json` for
// gloo/CPU, `_dump_nccl_trace_json` for NCCL). Nothing outside the process
// can ask for a dump, so each rank gets a small hook: a directory of its own,
// first on PYTHONPATH, holding a `sitecustomize.py` that chains to the
// interpreter's own sitecustomize and starts one daemon thread per Python
// process, blocked on a FIFO `<dir>/<pid>.fifo`. A byte written there makes
// the thread write `<dir>/<pid>.json`: {"pid", "torch": version or null,
// "dumps": [{"source", "trace"}], "errors": [...]}. The thread runs Python
// while the main thread waits in a collective (torch releases the GIL
// there); a stopped process, or one holding the GIL forever, answers
// nothing and the hang watch falls back to stacks.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "atl/core/expected.hpp"

namespace atl::os {

// The hook's Python source, as written into the rank's directory.
const std::string& flight_recorder_hook();

// A fresh directory `dir` (mode 0700; whatever was there is removed first,
// links never followed) holding the hook.
Status prepare_flight_recorder(const std::string& dir);
// The directory and everything in it (FIFOs, dumps), links not followed.
void remove_flight_recorder(const std::string& dir);

// Asks the Python process `pid`, whose hook lives in `dir`, for its flight
// record and waits up to `timeout` for it: the hook's JSON, or why there is
// none ("no hook in pid N (not Python, or started without atl's PYTHONPATH)",
// "pid N is stopped (a SIGSTOP or a debugger): it cannot answer", "pid N did
// not answer within 2 s (stopped, or holding the GIL)").
Expected<std::string> take_flight_record(const std::string& dir, pid_t pid,
                                         std::chrono::milliseconds timeout);

}  // namespace atl::os
