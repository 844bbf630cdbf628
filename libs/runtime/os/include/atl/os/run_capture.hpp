// run_capture: runs a short helper command (py-spy, gdb) and returns what it
// printed (stdout and stderr together), bounded in time and size: past the
// deadline its whole group is killed and what came so far is returned.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/os/child_process.hpp"

namespace atl::os {

struct Captured {
  std::string output;                // at most the limit's bytes
  std::optional<ExitStatus> status;  // none when it was killed at the deadline
  bool timed_out = false;
  bool truncated = false;
};

// `argv[0]` is looked up on PATH. An error when it cannot be started.
Expected<Captured> run_capture(const std::vector<std::string>& argv,
                               std::chrono::milliseconds timeout, std::size_t max_bytes = 1 << 20);

// The first executable `name` in PATH's directories, or in `extra_dirs`
// after them; empty when there is none.
std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs = {});

}  // namespace atl::os
