// The atlctl guide's debug workflow, as tests: every walkthrough of the seed
// with its exact lines, against a real 2 workers x 2 ranks cluster.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "test_cluster.hpp"

using namespace atl::test;

namespace {

const std::string kStopLines = "Stopping task in all workers...\nStop job task success.\n";
const std::string kSent = "Send command to all workers success.\n";

// A cluster whose user code records each start (per rank) and then waits.
class DebugCluster {
 public:
  explicit DebugCluster(std::vector<std::string> extra = {}) {
    std::string marker = c.dir() + "/attempts.";
    std::vector<std::string> args = {"--workers",       "2", "--nproc-per-node", "2",
                                     "--local-workers", "2", "--grace",          "5s"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(),
                {"--", "echo start >> " + marker + "$RANK; echo user code up; sleep 300"});
    head = &c.start_head(args);
    address = c.head_address();
    for (int rank = 0; rank < 4; ++rank)
      EXPECT_TRUE(c.wait_for_output(*head, "[rank " + std::to_string(rank) + "] user code up"));
  }
  ~DebugCluster() {
    if (head->process) head->process->signal(SIGTERM);
    c.wait_exit(*head);
    EXPECT_TRUE(c.no_strays_within());
  }

  CommandResult ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--address", address});
    return c.atlctl(args);
  }
  std::string status() { return ctl({"status"}).output; }
  int attempts(int rank) {
    return count_lines(read_file(c.dir() + "/attempts." + std::to_string(rank)));
  }

  TestCluster c;
  Started* head = nullptr;
  std::string address;
};

}  // namespace

TEST(DebugMode, SeedWalkthroughStopRunStopRecover) {
  DebugCluster d;
  EXPECT_EQ(d.status(), "Job status:  command\n");
  auto stop = d.ctl({"stop"});
  EXPECT_EQ(stop.exit_code, 0);
  EXPECT_EQ(stop.output, kStopLines);
  EXPECT_EQ(d.status(), "Job status:  debugStop\n");
  // The seed's clean-up of leftovers, aimed at a name no other test uses.
  auto run = d.ctl({"run",
                    "ps -ef |grep atl-no-such-leftover |grep -v grep |grep -v tini "
                    "|awk '{print $2}'|xargs -r kill -9"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, kSent);
  EXPECT_EQ(d.status(), "Job status:  debugCommand\n");
  EXPECT_EQ(d.ctl({"stop"}).output, kStopLines);
  EXPECT_EQ(d.status(), "Job status:  debugStop\n");
  auto recover = d.ctl({"recover"});
  EXPECT_EQ(recover.exit_code, 0);
  EXPECT_EQ(recover.output, "Task recovering...\nTask recover success.\n");
  EXPECT_EQ(d.status(), "Job status:  command\n");
  // Stopping user code is not a failure: the job is alive and well.
  EXPECT_EQ(d.c.output(*d.head).find("job failed"), std::string::npos) << d.c.output(*d.head);
}

TEST(DebugMode, RunOnSelectedRanksShowsOnlyTheirOutput) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  auto run = d.ctl({"run", "-r", "0,2-3", "echo out-$RANK-$LOCAL_RANK-$WORLD_SIZE"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output.rfind(kSent, 0), 0u) << run.output;
  EXPECT_NE(run.output.find("[rank 0] out-0-0-4\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[rank 2] out-2-0-4\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[rank 3] out-3-1-4\n"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("[rank 1]"), std::string::npos) << run.output;
  EXPECT_EQ(count_lines(run.output), 4) << run.output;
}

TEST(DebugMode, RunFollowsTheJobsPlacementOfRanks) {
  // SPREAD: ranks 0 and 2 on worker-0, 1 and 3 on worker-1.
  DebugCluster d({"--placement", "SPREAD", "--bundle", R"({"CPU": 0.5})"});
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  auto run = d.ctl({"run", "-r", "1-2", "echo on-$ATL_POD_NAME-local-$LOCAL_RANK"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("[rank 1] on-" + d.c.worker_name(1) + "-local-0\n"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("[rank 2] on-" + d.c.worker_name(0) + "-local-1\n"), std::string::npos)
      << run.output;
  // check runs once per pod, on that pod's first rank (worker-1's is rank 1).
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  auto check = d.ctl({"check", "-t", "gpu", "-w", d.c.worker_name(1)});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find(d.c.worker_name(1)), std::string::npos) << check.output;
  EXPECT_EQ(check.output.find(d.c.worker_name(0)), std::string::npos) << check.output;
}

TEST(DebugMode, AnEmptyOptionValueIsAPlainUsageError) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  auto run = d.ctl({"run", "-r", "", "true"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(run.output, "atlctl: run: --ranks: the value is empty\n");
  auto ranks = d.ctl({"run", "--ranks", "1", "--force", "echo forced-$RANK"});
  EXPECT_EQ(ranks.exit_code, 0) << ranks.output;
  EXPECT_NE(ranks.output.find("[rank 1] forced-1\n"), std::string::npos) << ranks.output;
  EXPECT_EQ(d.status(), "Job status:  debugStop\n");  // forced: untracked, state kept
}

// A check whose -o cannot be written is refused before it starts: the job
// stays in debugStop (it was left in debugCommand, the check running).
TEST(DebugMode, AnUnwritableOutputFileRefusesTheCheckAndChangesNothing) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  struct Case {
    std::string path, says;
  };
  for (const auto& k : {Case{d.c.dir(), "is a directory"}, Case{"/proc/x", "cannot write /proc/x"},
                        Case{d.c.dir() + "/no/such/dir/log", "cannot write"}}) {
    for (const char* cmd : {"check", "burn"}) {
      auto r = d.ctl({cmd, "-o", k.path});
      EXPECT_EQ(r.exit_code, 2) << cmd << " " << r.output;
      EXPECT_NE(r.output.find(k.says), std::string::npos) << r.output;
      EXPECT_EQ(count_lines(r.output), 1) << r.output;
      EXPECT_EQ(d.status(), "Job status:  debugStop\n") << cmd << " -o " << k.path;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(d.c.dir() + "/no")) << "nothing made on the way";
}

TEST(DebugMode, FailedRanksAreSummarisedAndFailTheRun) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  auto run = d.ctl({"run", "exit $((RANK % 2))"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("rank 1 on " + d.c.worker_name(0) + " failed: exit code 1"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("rank 3 on " + d.c.worker_name(1) + " failed: exit code 1"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("rank 0 on"), std::string::npos) << run.output;
}

TEST(DebugMode, ASecondRunWithoutStopIsRefused) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  ASSERT_EQ(d.ctl({"run", "true"}).exit_code, 0);
  auto again = d.ctl({"run", "true"});
  EXPECT_EQ(again.exit_code, 3);
  EXPECT_EQ(count_lines(again.output), 1) << again.output;
  EXPECT_NE(again.output.find("debugCommand"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("atlctl stop"), std::string::npos) << again.output;
  EXPECT_EQ(d.status(), "Job status:  debugCommand\n");
}

TEST(DebugMode, RunForceIsNotTrackedAndSurvivesStop) {
  DebugCluster d;
  std::string pids = d.c.dir() + "/forced.";
  // In state command, without stopping the job; --detach returns at once.
  auto run = d.ctl({"run", "-f", "--detach", "-r", "1",
                    "echo forced $$ > " + pids + "$RANK; echo hello; exec sleep 30"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output, kSent);
  EXPECT_EQ(d.status(), "Job status:  command\n");  // -f changes no state
  std::string pid_file = pids + "1";
  for (int i = 0; i < 500 && read_file(pid_file).empty(); ++i) std::this_thread::sleep_for(20ms);
  std::string line = read_file(pid_file);
  ASSERT_FALSE(line.empty());
  // Rank 1 is on pod 0: $$ there is the pod's number.
  pid_t pid = d.c.host_pid(0, std::stoi(line.substr(line.find(' ') + 1)));
  ASSERT_GT(pid, 0);
  EXPECT_EQ(d.ctl({"stop"}).output, kStopLines);
  EXPECT_EQ(::kill(pid, 0), 0) << "stop ended the untracked run -f process";
  // Its output still streams, readable with logs --run.
  auto logs = d.ctl({"logs", "--run", "1", "-r", "1"});
  EXPECT_EQ(logs.output, "[rank 1] hello\n");
  // A run that never was: named, exit 2, nothing printed.
  auto none = d.ctl({"logs", "--run", "9"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("logs: --run: there is no run 9"), std::string::npos) << none.output;
  ::kill(pid, SIGKILL);  // the test cleans up what stop (rightly) left
}

TEST(DebugMode, RecoverOutsideDebugStopIsRefused) {
  DebugCluster d;
  auto recover = d.ctl({"recover"});
  EXPECT_EQ(recover.exit_code, 3);
  EXPECT_EQ(count_lines(recover.output), 1) << recover.output;
  EXPECT_NE(recover.output.find("state command"), std::string::npos) << recover.output;
  EXPECT_NE(recover.output.find("debugStop"), std::string::npos) << recover.output;
  EXPECT_EQ(d.status(), "Job status:  command\n");
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  ASSERT_EQ(d.ctl({"run", "true"}).exit_code, 0);
  EXPECT_EQ(d.ctl({"recover"}).exit_code, 3);  // debugCommand: stop first
  EXPECT_EQ(d.status(), "Job status:  debugCommand\n");
}

TEST(DebugMode, RecoverRestartsUserCodeFromTheBeginning) {
  DebugCluster d;
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(d.attempts(rank), 1);
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  ASSERT_EQ(d.ctl({"recover"}).exit_code, 0);
  // Each rank wrote its start marker a second time: it ran from the top.
  for (int rank = 0; rank < 4; ++rank) {
    for (int i = 0; i < 500 && d.attempts(rank) < 2; ++i) std::this_thread::sleep_for(20ms);
    EXPECT_EQ(d.attempts(rank), 2) << "rank " << rank;
  }
  auto json = d.ctl({"status", "--json"});
  EXPECT_NE(json.output.find("\"attempt\": 2"), std::string::npos) << json.output;
}

TEST(DebugMode, TheMinimalLoopFromInsideAPod) {
  DebugCluster d;
  // As typed in a pod: no flags, ATL_ADDRESS from the environment.
  auto& loop = d.c.start("loop", {"/bin/sh", "-c",
                                  "export ATL_ADDRESS=" + d.address +
                                      "; atlctl stop && atlctl run \"echo hi\" && atlctl stop "
                                      "&& atlctl recover"});
  EXPECT_EQ(d.c.wait_exit(loop), 0) << d.c.output(loop);
  std::string out = d.c.output(loop);
  EXPECT_EQ(out.rfind(kStopLines + kSent, 0), 0u) << out;
  EXPECT_NE(out.find("Task recover success.\n"), std::string::npos) << out;
  EXPECT_EQ(d.status(), "Job status:  command\n");
}

TEST(DebugMode, BadRankSetsAreRefusedNamingTheBadPart) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  for (auto [spec, named] : std::vector<std::pair<std::string, std::string>>{{"5-2", "5"},
                                                                             {"3-1", "3-1"},
                                                                             {"a", "'a'"},
                                                                             {"1,,2", "1,,2"},
                                                                             {"-1", "-1"},
                                                                             {"4", "4"}}) {
    auto run = d.ctl({"run", "-r", spec, "true"});
    EXPECT_EQ(run.exit_code, 2) << spec << ": " << run.output;
    EXPECT_EQ(count_lines(run.output), 1) << run.output;
    EXPECT_NE(run.output.find(named), std::string::npos) << spec << ": " << run.output;
  }
  EXPECT_EQ(d.status(), "Job status:  debugStop\n");  // nothing changed
}

TEST(DebugMode, ConcurrentCommandsNeverCorruptState) {
  DebugCluster d;
  ASSERT_EQ(d.ctl({"stop"}).exit_code, 0);
  // Two operators run at once: one wins, the other is refused.
  std::vector<std::string> base = {atl::test::bin("atlctl"), "--address", d.address};
  auto args = [&](std::vector<std::string> extra) {
    auto all = base;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  auto& a = d.c.start("run-a", args({"run", "echo a"}));
  auto& b = d.c.start("run-b", args({"run", "echo b"}));
  int ca = d.c.wait_exit(a), cb = d.c.wait_exit(b);
  EXPECT_EQ(std::min(ca, cb), 0) << d.c.output(a) << d.c.output(b);
  EXPECT_EQ(std::max(ca, cb), 3) << d.c.output(a) << d.c.output(b);
  EXPECT_EQ(d.status(), "Job status:  debugCommand\n");
  // Two stops at once: both succeed, one state.
  auto& s1 = d.c.start("stop-1", args({"stop"}));
  auto& s2 = d.c.start("stop-2", args({"stop"}));
  EXPECT_EQ(d.c.wait_exit(s1), 0) << d.c.output(s1);
  EXPECT_EQ(d.c.wait_exit(s2), 0) << d.c.output(s2);
  EXPECT_EQ(d.status(), "Job status:  debugStop\n");
  // Sixty at once: every one answers (1-2% of the replies were lost in
  // CAF's deserialization pool; actor_system_setup.cpp).
  std::vector<atl::test::Started*> many;
  for (int i = 0; i < 60; ++i)
    many.push_back(&d.c.start("taint-" + std::to_string(i), args({"taint", "-a", "list"})));
  for (auto* p : many) EXPECT_EQ(d.c.wait_exit(*p), 0) << d.c.output(*p);
}

TEST(DebugMode, RefusedBeforeUserCodeRuns) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--ready-timeout", "60s", "--", "true"});
  std::string addr = c.head_address();
  for (auto cmd : {"stop", "recover"}) {
    auto r = c.atlctl({"--address", addr, cmd});
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("state pending"), std::string::npos) << r.output;
  }
  head.process->signal(SIGTERM);
  c.wait_exit(head);
}

namespace atl::test {
namespace {

// The log files of attempt dirs and links in the state dir's logs/ that
// belong to debug run `run`.
std::vector<std::string> files_of_run(TestCluster& c, int run) {
  std::vector<std::string> out;
  const std::string prefix = "run-" + std::to_string(run) + "-rank-";
  for (const auto& e : std::filesystem::recursive_directory_iterator(c.state_dir() + "/logs"))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  return out;
}

// A debug run the history dropped leaves nothing behind: its log files, their
// .times and its links go with its record (100 runs on 512 ranks left 103,430
// files and 51,713 links, and as many /metrics series, for good).
TEST(DebugMode, ADroppedRunsFilesGoWithItsRecord) {
  TestCluster c;
  auto& head =
      c.start_head({"--workers", "2", "--local-workers", "2", "--history", "2", "--", "sleep 600"});
  ASSERT_TRUE(c.wait_for_status("command"));
  for (int i = 0; i < 5; ++i) {
    auto run = c.atlctl({"--address", c.head_address(), "run", "-f", "-r", "all", "echo hi"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  // Runs 4 and 5 kept (--history 2); 1-3 dropped, the last as run 5 ended.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = files_of_run(c, 1).empty() && files_of_run(c, 2).empty() && files_of_run(c, 3).empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << files_of_run(c, 3).size() << " files of run 3 left";
  EXPECT_GE(files_of_run(c, 4).size(), 4u);  // each rank's file and link at least
  EXPECT_GE(files_of_run(c, 5).size(), 4u);
  auto logs = c.atlctl({"--address", c.head_address(), "logs", "--run", "5"});
  EXPECT_NE(logs.output.find("hi"), std::string::npos) << logs.output;
  auto dropped = c.atlctl({"--address", c.head_address(), "logs", "--run", "1"});
  EXPECT_NE(dropped.output.find("run 1 ended and its record was dropped"), std::string::npos)
      << dropped.output;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
}

}  // namespace
}  // namespace atl::test
