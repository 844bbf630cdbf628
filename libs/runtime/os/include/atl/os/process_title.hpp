// A process's title (/proc/PID/cmdline, what ps -f and pgrep -f show), set
// from inside it: a local pod forked by its head (child_process.hpp's
// instead_of_exec) reads as the workernode it is, not as the headnode it was.
// Linux reads the title from the memory of the process's argument strings;
// it is written over them (within them only: the environment's strings
// after them stay as they were, /proc/PID/environ with them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace atl::os {

// The bytes to write over an arguments' area `arg_bytes` long: the leading
// arguments of `argv` that fit whole, NUL-separated (argv[0] as its base
// name when its path does not fit, cut when even that does not), padded
// with NULs to the area's end. Empty when there is no area.
std::string process_title_bytes(const std::vector<std::string>& argv, std::size_t arg_bytes);

// `argv` without the user's command, for a title: what follows a bare
// "--", and the value of each flag of `valued` ("--entrypoint CMD",
// "--entrypoint=CMD"). A head whose title held `-- python3 train.py` died
// with the ranks under the guide's cleanup (`ps -ef | grep python | ...
// xargs kill -9`) on one machine.
std::vector<std::string> title_without_command(const std::vector<std::string>& argv,
                                               const std::vector<std::string>& valued);

// Writes `argv` as this process's title. Only in a process that no longer
// reads its original argument strings (a forked child). False, changing
// nothing, when the area cannot be found.
bool set_process_title(const std::vector<std::string>& argv);

}  // namespace atl::os
