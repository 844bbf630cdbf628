// atlctl burn and check on the CPU path: atl-burn runs on one rank of each
// worker in a child process, under the debug-state rules.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "test_cluster.hpp"

using namespace atl::test;

namespace {

// Two workers; worker 1 may declare GPUs it does not have, or run from
// another program (`worker1_argv0`) with another environment.
struct BurnCluster {
  explicit BurnCluster(std::vector<std::string> worker1_flags = {},
                       const std::string& worker1_argv0 = "",
                       const std::vector<std::string>& worker1_env = {}) {
    head = &c.start_head({"--workers", "2", "--grace", "5s", "--", "echo up; sleep 300"});
    c.start_worker(0);
    if (worker1_argv0.empty()) {
      c.start_worker(1, worker1_flags);
    } else {
      std::vector<std::string> argv = {worker1_argv0, "--head", c.head_address(), "--name",
                                       c.worker_name(1)};
      argv.insert(argv.end(), worker1_flags.begin(), worker1_flags.end());
      c.start("worker1", argv, worker1_env);
    }
    EXPECT_TRUE(c.wait_for_status("command"));
    EXPECT_EQ(ctl({"stop"}).exit_code, 0);
  }
  ~BurnCluster() {
    head->process->signal(SIGTERM);
    c.wait_exit(*head);
    EXPECT_TRUE(c.no_strays_within());
  }
  CommandResult ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--address", c.head_address()});
    return c.atlctl(args, 120s);
  }
  TestCluster c;
  Started* head = nullptr;
};

}  // namespace

TEST(BurnAndCheck, GemmBurnVerifiesEveryRoundOnEveryNode) {
  BurnCluster b;
  auto burn = b.ctl({"burn", "-t", "gemm", "-d", "3s"});
  EXPECT_EQ(burn.exit_code, 0) << burn.output;
  for (int w = 0; w < 2; ++w) {
    std::string pod = b.c.worker_name(w);
    EXPECT_NE(burn.output.find(pod + " GPU 0 round 1 ("), std::string::npos) << burn.output;
    EXPECT_NE(burn.output.find(pod + " GPU 0 (cpu): gemm "), std::string::npos) << burn.output;
  }
  EXPECT_EQ(burn.output.find("FAIL"), std::string::npos) << burn.output;
  size_t verdicts = 0;
  for (size_t at = burn.output.find(": PASS\n"); at != std::string::npos;
       at = burn.output.find(": PASS\n", at + 1))
    ++verdicts;
  EXPECT_EQ(verdicts, 2u) << burn.output;  // one verdict per node
  // The guide's first line (seed 000, "burn 命令输出示例").
  EXPECT_EQ(burn.output.rfind("All workers will be checked.\n", 0), 0u) << burn.output;
  EXPECT_TRUE(burn.output.size() > 16 &&
              burn.output.compare(burn.output.size() - 16, 16, "Check finished.\n") == 0)
      << burn.output;
  EXPECT_EQ(b.ctl({"status"}).output, "Job status:  debugCommand\n");
  auto again = b.ctl({"burn", "-d", "1s"});
  EXPECT_EQ(again.exit_code, 3) << again.output;  // stop first, as after run
}

TEST(BurnAndCheck, TransferBurnToAFileOnOneWorker) {
  BurnCluster b;
  std::string file = b.c.dir() + "/burn.log";
  std::ofstream(file) << "old content that -o overwrites\n";
  auto burn = b.ctl({"burn", "-t", "transfer", "-d", "1s", "-w", b.c.worker_name(1), "-e",
                     "NCCL_DEBUG=WARN;X=a,b", "-o", file});
  EXPECT_EQ(burn.exit_code, 0) << burn.output;
  std::string log = read_file(file);
  EXPECT_EQ(log.find("old content"), std::string::npos);
  EXPECT_NE(log.find(b.c.worker_name(1) + " GPU 0 (cpu): transfer 256M"), std::string::npos) << log;
  EXPECT_NE(log.find("checksum ok"), std::string::npos) << log;
  EXPECT_EQ(log.find(b.c.worker_name(0)), std::string::npos) << log;
}

TEST(BurnAndCheck, TheGuidesLongOptionNamesAreTaken) {
  BurnCluster b;
  std::string file = b.c.dir() + "/check.log";
  auto check = b.ctl({"check", "--checkType", "gpu", "--workerList", b.c.worker_name(0), "--envs",
                      "A=1", "--outputLogs", file});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  std::string log = read_file(file);
  EXPECT_EQ(log.rfind("Workers " + b.c.worker_name(0) + " will be checked.\n", 0), 0u) << log;
  EXPECT_NE(log.find(b.c.worker_name(0) + " GPU 0 (cpu): check PASS"), std::string::npos) << log;
  EXPECT_EQ(log.find(b.c.worker_name(1)), std::string::npos) << log;
  // status -v shows the command as atlctl took it, not atl-burn's arguments.
  auto verbose = b.ctl({"status", "-v"});
  EXPECT_NE(verbose.output.find("check -t gpu -w " + b.c.worker_name(0)), std::string::npos)
      << verbose.output;
  ASSERT_EQ(b.ctl({"stop"}).exit_code, 0);
  auto burn =
      b.ctl({"burn", "--burnType", "gemm", "--duration", "1s", "--workerList", b.c.worker_name(1)});
  EXPECT_EQ(burn.exit_code, 0) << burn.output;
  EXPECT_NE(burn.output.find(b.c.worker_name(1) + " GPU 0 (cpu): gemm "), std::string::npos)
      << burn.output;
  EXPECT_NE(b.ctl({"status", "-v"}).output.find("burn -t gemm -d 1s -w " + b.c.worker_name(1)),
            std::string::npos);
  // The burn handed its figure to the supervisor (status --json, /metrics).
  auto json = nlohmann::json::parse(b.ctl({"status", "--json"}).output);
  int gemm_figures = 0;
  for (const auto& f : json["figures"])
    gemm_figures += f["metric"] == "gemm_tflops" && f["pod"] == b.c.worker_name(1) &&
                    f["gpu"] == 0 && f["value"].get<double>() > 0;
  EXPECT_EQ(gemm_figures, 1) << json.dump();
  ASSERT_EQ(b.ctl({"stop"}).exit_code, 0);
  // One option under both its names is refused; nothing starts.
  auto both = b.ctl({"check", "-t", "gpu", "--checkType", "all"});
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("give --type or --checkType, not both"), std::string::npos)
      << both.output;
  EXPECT_EQ(b.ctl({"status"}).output, "Job status:  debugStop\n");
}

TEST(BurnAndCheck, AnUnwritableOutputFileIsRefusedBeforeAnythingStarts) {
  BurnCluster b;
  for (auto args : std::vector<std::vector<std::string>>{
           {"check", "-o", b.c.dir() + "/no-such-dir/x.log"},
           {"burn", "-d", "1s", "--outputLogs", b.c.dir() + "/no-such-dir/x.log"},
           {"check", "-o", ""}}) {
    auto r = b.ctl(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find("-o:"), std::string::npos) << r.output;
    EXPECT_EQ(b.ctl({"status"}).output, "Job status:  debugStop\n") << "after " << args[0];
  }
}

TEST(BurnAndCheck, BadBurnRequestsAreRefused) {
  BurnCluster b;
  auto batch = b.ctl({"burn", "-t", "batch"});
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.output.find("-w"), std::string::npos) << batch.output;
  for (auto args : std::vector<std::vector<std::string>>{{"burn", "-t", "gemmm"},
                                                         {"burn", "-d", "5x"},
                                                         {"burn", "-e", "a=1;;b=2"},
                                                         {"burn", "-w", "no-such-pod"},
                                                         {"burn", "-t", "global", "-w", "x"},
                                                         {"check", "-t", "cpu"}}) {
    auto r = b.ctl(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
  EXPECT_EQ(b.ctl({"status"}).output, "Job status:  debugStop\n");  // nothing changed
}

TEST(BurnAndCheck, CheckPassesOnHealthyNodes) {
  BurnCluster b;
  auto check = b.ctl({"check", "-t", "gpu"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output.rfind("All workers will be checked.\n", 0), 0u) << check.output;
  EXPECT_NE(check.output.find(b.c.worker_name(0) + " GPU 0 (cpu): check PASS\n"),
            std::string::npos);
  EXPECT_NE(check.output.find(b.c.worker_name(1) + " GPU 0 (cpu): check PASS\n"),
            std::string::npos);
  EXPECT_TRUE(
      check.output.size() > 28 &&
      check.output.compare(check.output.size() - 28, 28, "Check finished.\nCheck Quit.\n") == 0)
      << check.output;
}

TEST(BurnAndCheck, GlobalAllreduceAcrossTwoWorkersInTheSeedsFormat) {
  BurnCluster b;
  // ENVS reach the burn processes, but cannot take atl's control channel away.
  auto burn = b.ctl({"burn", "-t", "global", "-d", "3s", "-e", "NCCL_DEBUG=WARN;ATL_CONTROL_FD=9"});
  EXPECT_EQ(burn.exit_code, 0) << burn.output;
  const std::regex round(
      "Round [0-9]+: AllReduce Perf\\(GB/s\\): Size=(8|32)M, BusBW=[0-9]+\\.[0-9]{2} "
      "GB/s, AlgBW=[0-9]+\\.[0-9]{2} GB/s, MasterAddr=" +
      b.c.worker_name(0));
  int rounds = 0;
  std::istringstream lines(burn.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Round ", 0) != 0) continue;
    EXPECT_TRUE(std::regex_match(line, round)) << line;
    ++rounds;
  }
  EXPECT_GE(rounds, 2) << burn.output;  // at least one round of each size
  for (int w = 0; w < 2; ++w) {
    EXPECT_NE(burn.output.find(b.c.worker_name(w) + ": allreduce over 2 nodes"), std::string::npos)
        << burn.output;
  }
  EXPECT_EQ(burn.output.find("FAIL"), std::string::npos) << burn.output;
  EXPECT_NE(burn.output.find("#wrong 0: PASS"), std::string::npos) << burn.output;
}

TEST(BurnAndCheck, SizesSweepLikeNcclTestsAndBadSizesAreRefused) {
  BurnCluster b;
  for (auto args : std::vector<std::vector<std::string>>{
           {"burn", "-t", "gemm", "--sizes", "8M"},  // not an allreduce
           {"burn", "-t", "global", "--sizes", "8M:1M"},
           {"burn", "-t", "global", "--sizes", "1M:8M:1"},
           {"burn", "-t", "global", "--sizes", "1M;rm -rf /"}}) {
    auto r = b.ctl(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
  EXPECT_EQ(b.ctl({"status"}).output, "Job status:  debugStop\n");  // nothing started
  auto burn = b.ctl({"burn", "-t", "global", "-d", "1ms", "--sizes", "1M:4M"});
  EXPECT_EQ(burn.exit_code, 0) << burn.output;
  for (const char* size : {"Size=1M,", "Size=2M,", "Size=4M,"})
    EXPECT_NE(burn.output.find(size), std::string::npos) << size << "\n" << burn.output;
  EXPECT_EQ(burn.output.find("Size=8M"), std::string::npos) << burn.output;
}

TEST(BurnAndCheck, CheckAllRunsTheGpuAndAllreduceChecks) {
  BurnCluster b;
  auto check = b.ctl({"check"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output.rfind("All workers will be checked.\n", 0), 0u) << check.output;
  for (int w = 0; w < 2; ++w) {
    EXPECT_NE(check.output.find(b.c.worker_name(w) + " GPU 0 (cpu): check PASS"),
              std::string::npos);
    EXPECT_NE(check.output.find(b.c.worker_name(w) +
                                ": allreduce over 2 nodes (TCP ring), 1 rounds, #wrong 0: PASS"),
              std::string::npos)
        << check.output;
  }
}

TEST(BurnAndCheck, LocalNeedsGpusAndSaysSoOnEachNode) {
  BurnCluster b;
  auto burn = b.ctl({"burn", "-t", "local", "-d", "1s"});
  EXPECT_EQ(burn.exit_code, 1) << burn.output;
  for (int w = 0; w < 2; ++w) {
    EXPECT_NE(burn.output.find(b.c.worker_name(w) +
                               ": allreduce FAIL: a local allreduce runs among a node's GPUs, "
                               "and CUDA sees none here"),
              std::string::npos)
        << burn.output;
  }
}

TEST(BurnAndCheck, AMemberThatNeverJoinsEndsTheAllreduceForEveryoneNamingIt) {
  // Worker 1 runs a copy of workernode (and the guard it starts ranks
  // under) from a folder without atl-burn, and its PATH has none either: its
  // allreduce step cannot start. Worker 0 must not wait for it until a
  // timeout: the supervisor tells it at once.
  char folder[] = "/tmp/atl-bare-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string bare = folder;
  ASSERT_EQ(std::system(("cp " + bin("workernode") + " " + bin("atl-guard") + " " + bare).c_str()),
            0);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::system(("rm -rf " + dir).c_str()); }
  } cleanup{bare};
  BurnCluster b({}, bare + "/workernode", {"PATH=/usr/bin:/bin"});
  auto burn = b.ctl({"burn", "-t", "global", "-d", "1s"});
  EXPECT_EQ(burn.exit_code, 1) << burn.output;
  EXPECT_NE(
      burn.output.find(b.c.worker_name(0) + ": allreduce FAIL: " + b.c.worker_name(1) + " ended"),
      std::string::npos)
      << burn.output;
  EXPECT_NE(burn.output.find("before joining the allreduce"), std::string::npos) << burn.output;
}

TEST(BurnAndCheck, BatchOfOneWorkerMeetsOnlyItself) {
  BurnCluster b;
  auto burn = b.ctl({"burn", "-t", "batch", "-w", b.c.worker_name(1), "-d", "1s"});
  EXPECT_EQ(burn.exit_code, 0) << burn.output;
  EXPECT_NE(burn.output.find(b.c.worker_name(1) + ": allreduce over 1 node: nothing to exchange"),
            std::string::npos)
      << burn.output;
  EXPECT_EQ(burn.output.find(b.c.worker_name(0)), std::string::npos) << burn.output;
}

namespace {

CommandResult atl_burn(TestCluster& c, std::vector<std::string> args) {
  args.insert(args.begin(), std::string(ATL_BIN_DIR) + "/atl-burn");
  Started& p = c.start("atl-burn", args);
  CommandResult r;
  r.exit_code = c.wait_exit(p, 120s);
  r.output = c.output(p);
  return r;
}

}  // namespace

TEST(AtlBurnByHand, APodThatDeclaresGpusIsNeverBurnedOnTheCpuInstead) {
  TestCluster c;
  for (const char* what : {"gemm", "transfer", "allreduce", "check"}) {
    auto r = atl_burn(c, {what, "-d", "1s", "--pod", "p", "--expect-gpus", "64"});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(
        r.output.find(std::string("p: ") + what + " FAIL: the pod declares 64 GPUs but CUDA sees "),
        std::string::npos)
        << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;  // nothing ran
  }
  // Without a declaration it burns what there is, and says why not a GPU.
  auto cpu = atl_burn(c, {"gemm", "-d", "1ms", "--pod", "p", "--size", "64"});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.output;
  if (cpu.output.find("(cuda)") == std::string::npos) {
    EXPECT_NE(cpu.output.find("p: no GPU in use ("), std::string::npos) << cpu.output;
  }
  EXPECT_NE(cpu.output.find("p GPU 0 ("), std::string::npos) << cpu.output;
}

TEST(AtlBurnByHand, SweepOptionsAreCheckedLikeNcclTests) {
  TestCluster c;
  for (auto args : std::vector<std::vector<std::string>>{
           {"allreduce", "-b", "8M"},                         // no end
           {"allreduce", "-b", "8M", "-e", "1M"},             // end below begin
           {"allreduce", "-b", "8M", "-e", "1G", "-f", "1"},  // never ends
           {"allreduce", "-b", "2", "-e", "1G"},              // less than a float
           {"allreduce", "-b", "8M", "-e", "1G", "--sizes", "8M"},
           {"allreduce", "--iters", "0"},
           {"allreduce", "--warmup-iters", "-1"}}) {
    auto r = atl_burn(c, args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
  // A sweep by hand over one member: the sizes are taken, nothing to exchange.
  auto one = atl_burn(c, {"allreduce", "-b", "1M", "-e", "4M", "--pod", "p"});
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("p: allreduce over 1 node: nothing to exchange"), std::string::npos)
      << one.output;
}
