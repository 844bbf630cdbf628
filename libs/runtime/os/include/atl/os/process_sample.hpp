// What a rank's process tree is doing, from /proc: one pass reads every
// process's stat line (state, parent, CPU time), and a rank's sample sums
// its tree's CPU time and I/O and takes the state that matters most in it.
// The rank's own interpreter is found through its wrappers (sh -c, a
// launcher script), apart from its helpers (DataLoader workers and other
// forks). The node agent takes one each heartbeat for the hang watch
// (HangWatch): cheap (one directory walk a node), no ptrace, nothing asked
// of user code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
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
  std::int64_t io_bytes = 0;   // bytes its processes read and wrote so far (rchar + wchar)
};
// Each process's children in `table`: built once for the trees of many ranks.
using ChildIndex = std::unordered_map<pid_t, std::vector<pid_t>>;
ChildIndex child_index(const ProcessTable& table);

// What is asked of a process beyond its stat line, only where the stat
// lines leave the rank's own interpreter in doubt: its command line ("" when
// it cannot be read) and whether it has torch loaded. live_facts() reads
// /proc; tests give their own.
struct ProcessFacts {
  std::function<std::string(pid_t)> cmdline;
  std::function<bool(pid_t)> holds_torch;
  // Bytes read and written so far (/proc/PID/io's rchar + wchar; 0 unreadable).
  std::function<std::int64_t(pid_t)> io_bytes;
};
const ProcessFacts& live_facts();
// Facts of nothing: command lines unknown, no torch, no I/O.
const ProcessFacts& no_facts();

// `root` and every process below it in `table` (io_bytes through `facts`).
TreeSample sample_tree(const ProcessTable& table, const ChildIndex& children, pid_t root,
                       const ProcessFacts& facts = no_facts());
TreeSample sample_tree(const ProcessTable& table, pid_t root);

// The processes of one rank's tree that tell what the rank does.
struct RankProcesses {
  // The rank's own interpreter: of the Python processes that are not
  // helpers, the only one; else the deepest holding torch (a launcher
  // script, torchrun, above it; wandb-like services beside it hold none);
  // else the deepest. No Python at all: the deepest process. 0: gone.
  pid_t main = 0;
  // Its helpers, by pid: Python processes forked from it (DataLoader
  // workers: their command line is their parent's), multiprocessing's
  // spawned children and trackers, torch's compile workers.
  std::vector<pid_t> helpers;
};
RankProcesses rank_processes(const ProcessTable& table, const ChildIndex& children, pid_t root,
                             const ProcessFacts& facts);
// Whether `pid` is a helper of its parent `parent` (both in `table`).
bool is_helper(const ProcessTable& table, pid_t pid, pid_t parent, const ProcessFacts& facts);

// The state that matters more for a hang: stopped, then uninterruptible,
// then running, then anything else (as 'S').
char worse_state(char a, char b);

// The process of `root`'s tree whose stack tells what the rank does: the
// rank's main interpreter (rank_processes), never one of its helpers.
pid_t stack_target(const ProcessTable& table, const ChildIndex& children, pid_t root,
                   const ProcessFacts& facts = live_facts());
pid_t stack_target(const ProcessTable& table, pid_t root);

// The process an operator knows as the rank (status -v's PID): its main
// interpreter when it runs Python (the training script, not its launcher or
// its data loader workers), else `root`'s first child (the entrypoint under
// atl's guard), else `root` (0: the tree is gone).
pid_t user_process(const ProcessTable& table, const ChildIndex& children, pid_t root,
                   const ProcessFacts& facts = live_facts());

struct StackCapture {
  pid_t target = 0;
  std::string tool;   // "py-spy", "gdb", or empty when none could be used
  std::string text;   // what it printed
  std::string error;  // why there is no stack
  // The main's Python helpers (DataLoader workers), by pid, each with what
  // py-spy printed of it (empty where it could not): at most kMaxHelperStacks.
  std::vector<pid_t> helpers;
  std::vector<std::string> helper_texts;
};
constexpr std::size_t kMaxHelperStacks = 8;
// The rank's stack: `py-spy dump --nonblocking` for Python (py-spy on PATH
// or beside the interpreter), else `gdb -batch` (the main thread's bt);
// each bounded by `timeout`; then its helpers' with py-spy. Both need
// ptrace rights over the rank (a pod without CAP_SYS_PTRACE gets an error
// and the /proc facts only).
// With `may_stop` false, a native rank (no py-spy for it) gets no stack:
// gdb's attach stops it (a rank that computes is not to be stopped for a
// look the watch does not need); py-spy's non-blocking read is still taken.
StackCapture capture_stack(const ProcessTable& table, const ChildIndex& children, pid_t root,
                           std::chrono::milliseconds timeout, bool may_stop = true);
StackCapture capture_stack(const ProcessTable& table, pid_t root,
                           std::chrono::milliseconds timeout);

}  // namespace atl::os
