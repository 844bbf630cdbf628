// A line-based side channel between a process the node agent started and its
// Executor: a Unix socket pair, the child's end at a fixed descriptor named by
// ATL_CONTROL_FD. The child writes requests ("rendezvous {...}"), the
// Executor forwards them to the supervisor as actor messages and writes the
// answers back. The rank's stdout stays the user's alone: nothing is parsed
// out of it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "atl/core/expected.hpp"

namespace atl::os {

inline constexpr const char* kControlFdVariable = "ATL_CONTROL_FD";
inline constexpr int kChildControlFd = 3;  // where the child finds its end

// Both ends, close-on-exec; the spawner moves `child` to kChildControlFd.
struct ControlPair {
  int parent = -1;
  int child = -1;
};
Expected<ControlPair> make_control_pair();

// This process's end, from ATL_CONTROL_FD; nothing when it was started without one.
std::optional<int> control_fd_from_environment();

// Writes `line` and a newline (a line never contains one).
Status write_line(int fd, const std::string& line);

// Reads one line, keeping what follows it in `buffer` for the next call.
// Errors: the other end closed, the timeout passed, or a read failed.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  enum class Result { line, timeout, closed, error };
  Result read(std::string& line, std::chrono::milliseconds timeout);

 private:
  int fd_;
  std::string buffer_;
};

}  // namespace atl::os
