// What a rank's process tree is doing, from /proc: one pass reads every
// process's stat line (state, parent, CPU time), and a rank's sample sums
// its tree's CPU time and takes the state that matters most in it. The node
// agent takes one each heartbeat for the hang watch (HangWatch): cheap (one
// directory walk a node), no ptrace, nothing asked of user code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

struct ProcStat {
  pid_t pid = 0;
  std::string comm;
  char state = '?';  // R, S, D, T, t, Z, I, ...
  pid_t ppid = 0;
  // Clock ticks: its own user + system time, and that of children it reaped.
  std::int64_t cpu_ticks = 0;
  std::int32_t threads = 0;
  std::int64_t rss_pages = 0;  // resident set (field 24)
};

// One /proc/<pid>/stat line. The command name may hold anything (spaces,
// parentheses): it runs to the last ')'.
Expected<ProcStat> parse_proc_stat(std::string_view line);

using ProcessTable = std::unordered_map<pid_t, ProcStat>;
// Every process now (those that vanish while being read are left out).
ProcessTable read_process_table();

struct TreeSample {
  std::int64_t cpu_ticks = 0;  // the tree's CPU time so far
  char state = 'S';            // 'T' over 'D' over 'R' over 'S' (zombies and idle threads: 'S')
  std::int32_t processes = 0;  // 0: `root` is gone
  std::int64_t rss_bytes = 0;  // the tree's resident memory
};
// Each process's children in `table`: built once for the trees of many ranks.
using ChildIndex = std::unordered_map<pid_t, std::vector<pid_t>>;
ChildIndex child_index(const ProcessTable& table);

// `root` and every process below it in `table`.
TreeSample sample_tree(const ProcessTable& table, const ChildIndex& children, pid_t root);
TreeSample sample_tree(const ProcessTable& table, pid_t root);

// The state that matters more for a hang: stopped, then uninterruptible,
// then running, then anything else (as 'S').
char worse_state(char a, char b);

// The process of `root`'s tree whose stack tells what the rank does: the
// deepest one whose command is python*, else the deepest one (0: the tree
// is gone).
pid_t stack_target(const ProcessTable& table, const ChildIndex& children, pid_t root);
pid_t stack_target(const ProcessTable& table, pid_t root);

// The process an operator knows as the rank (status -v's PID): the
// shallowest python* of `root`'s tree (the training script, not its data
// loader workers), else `root`'s first child (the entrypoint under atl's
// guard), else `root` (0: the tree is gone).
pid_t user_process(const ProcessTable& table, const ChildIndex& children, pid_t root);

struct StackCapture {
  pid_t target = 0;
  std::string tool;   // "py-spy", "gdb", or empty when none could be used
  std::string text;   // what it printed
  std::string error;  // why there is no stack
};
// The target's stack: `py-spy dump --nonblocking` for Python (py-spy on
// PATH or beside the interpreter), else `gdb -batch` (the main thread's bt);
// each bounded by `timeout`. Both need ptrace rights over the rank (a pod
// without CAP_SYS_PTRACE gets an error and the /proc facts only).
StackCapture capture_stack(const ProcessTable& table, const ChildIndex& children, pid_t root,
                           std::chrono::milliseconds timeout);
StackCapture capture_stack(const ProcessTable& table, pid_t root,
                           std::chrono::milliseconds timeout);

}  // namespace atl::os
