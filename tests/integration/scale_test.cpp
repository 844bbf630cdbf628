// Scale paths with simulated pods (workernode --simulate --fake-ranks): the
// head's log files stay within a bounded number of descriptors however many
// streams a job writes, and atlctl run collects thousands of ranks' output.
#include <dirent.h>
#include <gtest/gtest.h>

#include "test_cluster.hpp"

using namespace atl::test;

namespace {

int open_fds(int pid) {
  int n = 0;
  if (DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n - 2;  // . and ..
}

}  // namespace

TEST(Scale, ThousandsOfLogStreamsKeepTheHeadsFilesBoundedAndRunCollectsThemAll) {
  TestCluster c;
  constexpr int kPods = 100, kPerPod = 8, kRanks = kPods * kPerPod;
  auto& head =
      c.start_head({"--workers", std::to_string(kPods), "--nproc-per-node", std::to_string(kPerPod),
                    "--dashboard-port", "off", "--", "sleep 600"});
  c.start_worker(0, {"--simulate", std::to_string(kPods), "--fake-ranks", "--node", "sim"});
  ASSERT_TRUE(c.wait_for_status("command", 120s)) << c.output(head);
  ASSERT_EQ(c.atlctl({"stop"}).exit_code, 0);
  // Each run writes a stream per rank: 800 + 2 x 800 files in all.
  for (int run = 0; run < 2; ++run) {
    auto r = c.atlctl({"run", "-r", "all", "echo", "hello"}, 120s);
    ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
    int hellos = 0;
    for (size_t at = 0; (at = r.output.find("] hello\n", at)) != std::string::npos; ++at) ++hellos;
    EXPECT_EQ(hellos, kRanks) << "run " << run;
    ASSERT_EQ(c.atlctl({"stop"}).exit_code, 0);
  }
  EXPECT_LT(open_fds(head.process->pid()), 600);
  // Every file is complete, and rank-0.log still points at this attempt's file.
  EXPECT_EQ(read_file(c.state_dir() + "/logs/run-2-rank-799.log"), "hello\n");
  EXPECT_NE(read_file(c.state_dir() + "/logs/rank-0.log").find("[fake rank] sleep 600"),
            std::string::npos);
  auto status = c.atlctl({"status"});
  EXPECT_NE(status.output.find("debugStop"), std::string::npos) << status.output;
}

// `seq N` on fake ranks streams N lines in acknowledged chunks (as a pump
// does): every line lands in each rank's file, in order, and the run ends.
TEST(Scale, FakeRanksStreamSeqInChunksAndEveryLineLands) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "2", "--nproc-per-node", "8", "--dashboard-port", "off", "--", "sleep 600"});
  c.start_worker(0, {"--simulate", "2", "--fake-ranks", "--node", "sim"});
  ASSERT_TRUE(c.wait_for_status("command", 120s)) << c.output(head);
  ASSERT_EQ(c.atlctl({"stop"}).exit_code, 0);
  auto r = c.atlctl({"run", "-r", "0-15", "seq", "20000"}, 120s);  // ~106 KiB: 2 chunks each
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  std::string expected;
  for (int i = 1; i <= 20000; ++i) expected += std::to_string(i) + "\n";
  for (int rank : {0, 7, 15})
    EXPECT_EQ(read_file(c.state_dir() + "/logs/run-1-rank-" + std::to_string(rank) + ".log"),
              expected)
        << "rank " << rank;
  ASSERT_EQ(c.atlctl({"stop"}).exit_code, 0);
  auto bad = c.atlctl({"run", "-r", "0", "seq", "x"}, 120s);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("seq: expected one count from 0 to 999999999, got 'x'"),
            std::string::npos)
      << bad.output;
}

TEST(Scale, SimulateNeedsANameEndingInAnIndex) {
  TestCluster c;
  c.make_credentials();
  auto& w = c.start("worker", {bin("workernode"), "--head", "127.0.0.1:1", "--name", "podx",
                               "--simulate", "3", "--tls-dir", c.state_dir() + "/tls"});
  EXPECT_EQ(c.wait_exit(w), 2);
  EXPECT_NE(c.output(w).find("--simulate: --name must end in the first pod's index"),
            std::string::npos)
      << c.output(w);
  auto& zero = c.start("worker0", {bin("workernode"), "--head", "127.0.0.1:1", "--name",
                                   "p-worker-0", "--simulate", "0"});
  EXPECT_EQ(c.wait_exit(zero), 2);
  EXPECT_NE(c.output(zero).find("--simulate: must be between 1 and 4096"), std::string::npos);
}

// Above 65,536 ranks the old packed stream ids collided: run 1's rank 70,000
// wrote into run-2-rank-4464.log. Typed ids: each run's rank its own file.
TEST(Scale, ARunOnRankSeventyThousandLandsInItsOwnFile) {
  TestCluster c;
  constexpr int kPods = 70, kPerPod = 1001;  // 70,070 ranks
  // A stop waits for 70,070 ends, reported through one simulated workernode:
  // seconds alone, once over 20 s (the default grace and its slack) beside the Ray
  // tests on 2 cores. The fake ranks end at once; the grace only bounds it.
  // This test is about stream ids, not liveness: planning and launching
  // 70,070 ranks held the head's actors over 3 s on a loaded 2-core CI
  // machine, and the simulated pods, hearing nothing for the default 3 s,
  // left (launch time at this scale is issue 29's, measured in bench/).
  auto& head = c.start_head({"--workers", std::to_string(kPods), "--nproc-per-node",
                             std::to_string(kPerPod), "--grace", "90s", "--heartbeat-timeout",
                             "30s", "--dashboard-port", "off", "--", "sleep 600"});
  c.start_worker(0, {"--simulate", std::to_string(kPods), "--fake-ranks", "--node", "sim"});
  ASSERT_TRUE(c.wait_for_status("command", 300s)) << c.output(head).substr(0, 4000);
  ASSERT_EQ(c.atlctl({"stop"}, 120s).exit_code, 0);
  auto first = c.atlctl({"run", "-r", "70000", "echo", "seventy-thousand"}, 120s);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("[rank 70000] seventy-thousand"), std::string::npos) << first.output;
  ASSERT_EQ(c.atlctl({"stop"}, 120s).exit_code, 0);
  auto second = c.atlctl({"run", "-r", "4464", "echo", "four-thousand"}, 120s);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(second.output.find("seventy-thousand"), std::string::npos) << second.output;
  EXPECT_EQ(read_file(c.state_dir() + "/logs/run-1-rank-70000.log"), "seventy-thousand\n");
  EXPECT_EQ(read_file(c.state_dir() + "/logs/run-2-rank-4464.log"), "four-thousand\n");
  auto logs = c.atlctl({"logs", "--run", "1", "-r", "70000"}, 120s);
  EXPECT_EQ(logs.output, "[rank 70000] seventy-thousand\n") << logs.output;
}
