// Stacks of a job's ranks, side by side: what `py-spy dump` and gdb's
// `thread apply all bt` print, parsed into frames; each rank's signature
// (its main thread's functions and files, innermost first, without line
// numbers, addresses or arguments); and the ranks grouped by signature, the
// dominant group, and the outliers a hang is blamed on. Pure text in, plain
// data out: tested on recorded outputs (tests/unit/data/stacks).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace atl {

struct StackFrame {
  std::string function;  // "train_step", "c10d::Reducer::finalize_backward()", "??"
  std::string file;      // "ddp.py", "/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13", or empty
  int line = 0;          // 0: not known
};

struct ThreadStack {
  std::string id;                  // py-spy's thread id, gdb's thread number
  std::string name;                // "MainThread", "python3"
  std::string state;               // py-spy's "idle", "active", "active+gil"; empty from gdb
  bool main = false;               // the process's main thread
  std::vector<StackFrame> frames;  // innermost first
};

// `py-spy dump [--nonblocking]`: every thread block ("Thread N (state):
// "name"") and its frames ("    function (file:line)"). Lines of anything
// else (the process header, warnings) are skipped.
std::vector<ThreadStack> parse_py_spy(std::string_view text);

// "rank 3", "ranks 0,2,5", "ranks 0,1,...,7,... (64)": ascending ranks in words.
std::string rank_words(const std::vector<std::int32_t>& ranks);

// `gdb -batch -ex "thread apply all bt"`: every "Thread N (...LWP id...)"
// block and its "#k ..." frames; thread 1 is the main one.
std::vector<ThreadStack> parse_gdb(std::string_view text);

// A rank's stack for grouping: its main thread's frames as "function
// (file)" from the innermost out, joined by " < "; the first thread when
// none is marked main; empty when there is none.
std::string stack_signature(const std::vector<ThreadStack>& threads);
// The innermost frame as "function (file)", for a one-line summary.
std::string stack_top(const std::vector<ThreadStack>& threads);

// Where a rank's main process waits on its DataLoader (its stack is in
// torch/utils/data), the worker that does not deliver, named as the issue
// would be: "rank 1's DataLoader worker 0 in __getitem__ (train.py)". A
// worker is a helper whose stack runs `_worker_loop`, numbered in the order
// of `helpers` (by pid: the order torch starts them); the one named is
// caught fetching (in `_utils/fetch.py`). Empty when the main is not
// waiting on its loader, or no worker is caught fetching.
std::string stuck_loader_worker(std::int32_t rank, const std::vector<ThreadStack>& main,
                                const std::vector<std::vector<ThreadStack>>& helpers);

struct RankStack {
  std::int32_t rank = 0;
  std::string pod;
  std::string signature;  // empty: no stack could be taken
  std::string top;        // the innermost frame, for the summary
  char state = 'S';       // from /proc: 'T' stopped, 'D' uninterruptible, 'R', 'S'
  // Who to name when this rank stands apart alone ("rank 1's DataLoader
  // worker 0 in ..."); empty: "rank N in <top>".
  std::string blame;
};

struct StackGroup {
  std::string signature;
  std::string top;
  std::vector<std::int32_t> ranks;  // ascending
};

struct StackDiagnosis {
  std::vector<StackGroup> groups;      // by size, largest first (ties: by first rank)
  std::vector<std::int32_t> outliers;  // ascending: ranks to blame, may be empty
  std::vector<std::int32_t> unknown;   // ranks without a stack (not evidence)
  std::string why;                     // one line: what sets the outliers apart
};

// Groups the ranks by signature. The dominant group is the largest one when
// it is strictly larger than every other; the ranks outside it are outliers,
// and so are ranks stopped (T) or in uninterruptible sleep (D), unless that
// is every rank. No dominant group (all differ, or a tie): only the T/D ones.
StackDiagnosis group_stacks(const std::vector<RankStack>& ranks);

// Whether two looks a moment apart saw the same thing: the same outliers
// and the same groups. A hung job's stacks stand still; a job computing in
// silence is caught at different places each time, and its "outliers" are
// only a snapshot's accident.
bool same_grouping(const StackDiagnosis& a, const StackDiagnosis& b);

}  // namespace atl
