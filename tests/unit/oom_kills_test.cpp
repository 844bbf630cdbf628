// The OOM killer's counts and what a failed process's end says of them.
#include "atl/os/oom_kills.hpp"

#include <gtest/gtest.h>
#include <signal.h>

using atl::os::ExitStatus;
using atl::os::oom_count_files;
using atl::os::oom_hint;
using atl::os::OomKills;
using atl::os::parse_oom_kill;

TEST(OomKills, TheCountIsReadFromEachFileThatHoldsIt) {
  EXPECT_EQ(parse_oom_kill("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n"), 2);
  EXPECT_EQ(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\noom_kill 17"), 17);
  EXPECT_EQ(parse_oom_kill("pgfault 1\noom_kill 0\n"), 0);
  EXPECT_EQ(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\n"), std::nullopt);  // an old kernel
  EXPECT_EQ(parse_oom_kill("oom_kill x1\n"), std::nullopt);
  EXPECT_EQ(parse_oom_kill("oom_kill \n"), std::nullopt);
  EXPECT_EQ(parse_oom_kill(""), std::nullopt);
}

TEST(OomKills, ThePodsCgroupIsFoundInV2AndV1) {
  EXPECT_EQ(oom_count_files("0::/kubepods/pod1/ctr\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/kubepods/pod1/ctr/memory.events",
                                      "/sys/fs/cgroup/unified/kubepods/pod1/ctr/memory.events",
                                      "/sys/fs/cgroup/memory.events"}));
  EXPECT_EQ(oom_count_files("0::/\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory.events",
                                      "/sys/fs/cgroup/unified/memory.events",
                                      "/sys/fs/cgroup/memory.events"}));
  // v1 (a hybrid host: the v2 line names no memory controller).
  EXPECT_EQ(oom_count_files("12:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory/docker/abc/memory.oom_control",
                                      "/sys/fs/cgroup/memory/memory.oom_control"}));
  EXPECT_EQ(oom_count_files("4:blkio,memory:/a:b\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory/a:b/memory.oom_control",
                                      "/sys/fs/cgroup/memory/memory.oom_control"}));
  EXPECT_TRUE(oom_count_files("").empty());
  EXPECT_TRUE(oom_count_files("garbage\n").empty());
}

TEST(OomKills, ThisProcessesCountsAreRead) {
  const OomKills now = atl::os::read_oom_kills();
  EXPECT_TRUE(now.host.has_value()) << "/proc/vmstat has oom_kill since Linux 4.13";
}

namespace {
const ExitStatus kKilled{0, SIGKILL};
const ExitStatus kExit1{1, 0};
}  // namespace

TEST(OomKills, APodsKillWhileItRanSaysOutOfMemoryAndWhatToDo) {
  const auto hint = oom_hint({3, 10}, {4, 11}, kKilled);
  ASSERT_TRUE(hint);
  EXPECT_EQ(*hint,
            "out of memory: the kernel's OOM killer ended a process of this pod while it ran; "
            "give the pod more memory, or use less (smaller batches, fewer DataLoader workers)");
  // A DataLoader worker killed, the rank exits 1: the same.
  EXPECT_NE(oom_hint({0, 0}, {2, 2}, kExit1).value_or("").find("ended 2 processes of this pod"),
            std::string::npos);
}

TEST(OomKills, OnlyTheHostsKillSaysSoTentatively) {
  EXPECT_EQ(oom_hint({0, 5}, {0, 6}, kKilled).value_or(""),
            "out of memory? the kernel's OOM killer ended a process on this host while it ran");
  EXPECT_EQ(oom_hint({std::nullopt, 5}, {std::nullopt, 7}, kExit1).value_or(""),
            "out of memory? the kernel's OOM killer ended 2 processes on this host while it ran");
}

TEST(OomKills, NothingIsSaidWithoutAKillOrForASuccess) {
  EXPECT_FALSE(oom_hint({1, 1}, {1, 1}, kKilled));  // someone's kill -9
  EXPECT_FALSE(oom_hint({1, 1}, {1, 1}, kExit1));
  EXPECT_FALSE(oom_hint({1, 1}, {2, 2}, ExitStatus{0, 0}));
  EXPECT_FALSE(oom_hint({5, 5}, {std::nullopt, std::nullopt}, kExit1));
}

TEST(OomKills, ASigkillWhereNoCountCanBeReadIsAQuestion) {
  EXPECT_EQ(oom_hint({}, {}, kKilled).value_or(""),
            "out of memory? (SIGKILL is the OOM killer's signal; this host's OOM counts cannot "
            "be read)");
  EXPECT_FALSE(oom_hint({}, {}, kExit1));
  EXPECT_FALSE(oom_hint({}, {}, ExitStatus{0, SIGTERM}));
}
