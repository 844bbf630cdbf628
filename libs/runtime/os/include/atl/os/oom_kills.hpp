// What the kernel's OOM killer did while a process ran: the count of its
// kills in the pod's memory cgroup (cgroup v2 memory.events, v1
// memory.oom_control) and on the host (/proc/vmstat), read at a rank's start
// and at its end. A rank killed by SIGKILL, or one whose DataLoader worker
// was (torch then raises "DataLoader worker ... exited unexpectedly" and the
// rank exits 1), is then said to have run out of memory, with what to do,
// instead of only "killed by signal 9".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "atl/os/child_process.hpp"

namespace atl::os {

struct OomKills {
  std::optional<std::int64_t> pod;   // this process's memory cgroup's; none: unreadable
  std::optional<std::int64_t> host;  // the whole host's (/proc/vmstat)
};

// The count in an "oom_kill N" line (memory.events, memory.oom_control and
// /proc/vmstat all write it so); none when there is no such line.
std::optional<std::int64_t> parse_oom_kill(std::string_view text);

// Where this process's memory cgroup keeps its count, from the text of
// /proc/self/cgroup, most likely first: v2 ("0::/PATH") memory.events under
// /sys/fs/cgroup (or its unified mount), v1 ("N:...memory...:/PATH")
// memory.oom_control under /sys/fs/cgroup/memory, then the mount's own root
// (a container that sees its cgroup as the root but is told the host's path).
std::vector<std::string> oom_count_files(std::string_view proc_self_cgroup);

// Both counts now (~20 us: two small reads).
OomKills read_oom_kills();

// What a process's end says of the OOM killer, given the counts at its start
// and at its end: the pod's count grew (it, or a process of its pod, was
// killed for memory), only the host's did, or it was SIGKILLed where no count
// can be read. None when the process succeeded or nothing points at memory.
std::optional<std::string> oom_hint(const OomKills& before, const OomKills& after,
                                    const ExitStatus& status);

}  // namespace atl::os
