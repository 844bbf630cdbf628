// A job's life end to end with real processes: SPMD and driver mode, failures,
// timeouts, lost pods, logs, and no process left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "test_cluster.hpp"

using namespace atl::test;

namespace {

// Each rank prints its identity on one line.
const char* kPrintEnv =
    "echo \"ENV RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE NODE_RANK=$NODE_RANK "
    "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT "
    "POD=$ATL_POD_NAME JOB=$ATL_JOB_ID IF=$GLOO_SOCKET_IFNAME ADDR=$ATL_ADDRESS\"";

}  // namespace

namespace {
// The MASTER_PORT the ranks printed (kPrintEnv's "MASTER_PORT=N "), or "".
std::string master_port_in(const std::string& out) {
  const auto at = out.find("MASTER_PORT=");
  if (at == std::string::npos) return "";
  const auto from = at + 12;
  return out.substr(from, out.find(' ', from) - from);
}
}  // namespace

TEST(JobLifecycle, SpmdTwoWorkersTwoRanksEachSeeTheirEnvironment) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2", "--", kPrintEnv});
  ASSERT_EQ(c.wait_exit(head), 0) << c.output(head);
  std::string out = c.output(head);
  std::string addr = c.head_address();
  // Every pod local (one host): a free port of the job's own, not torch's
  // 29500 that every such job would share.
  const std::string port = master_port_in(out);
  EXPECT_NE(port, "29500");
  for (int rank = 0; rank < 4; ++rank) {
    int node = rank / 2;
    std::string expected = "[rank " + std::to_string(rank) + "] ENV RANK=" + std::to_string(rank) +
                           " LOCAL_RANK=" + std::to_string(rank % 2) +
                           " WORLD_SIZE=4 NODE_RANK=" + std::to_string(node) +
                           " LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1" + " MASTER_PORT=" + port +
                           " POD=" + c.worker_name(node) + " JOB=" + c.job_id() +
                           " IF=lo ADDR=" + addr + "\n";
    EXPECT_NE(out.find(expected), std::string::npos) << "missing: " << expected << "in:\n" << out;
    // The same line, unprefixed, in the rank's log file.
    std::string log = read_file(c.state_dir() + "/logs/rank-" + std::to_string(rank) + ".log");
    EXPECT_EQ(log, expected.substr(expected.find("] ") + 2));
  }
  EXPECT_NE(out.find("Job status:  succeeded\n"), std::string::npos) << out;
  EXPECT_EQ(read_file(c.state_dir() + "/address"), addr + "\n");
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, SpmdPlacementLaysRanksOutByThePlacementEngine) {
  TestCluster c;
  // SPREAD over 2 pods: bundle i alternates pods; each pod numbers its ranks in turn.
  auto& head =
      c.start_head({"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2",
                    "--placement", "spread", "--bundle", R"({"CPU": 0.5})", "--", kPrintEnv});
  ASSERT_EQ(c.wait_exit(head), 0) << c.output(head);
  std::string out = c.output(head);
  const std::string port = master_port_in(out);
  for (int rank = 0; rank < 4; ++rank) {
    std::string expected = "[rank " + std::to_string(rank) + "] ENV RANK=" + std::to_string(rank) +
                           " LOCAL_RANK=" + std::to_string(rank / 2) +
                           " WORLD_SIZE=4 NODE_RANK=" + std::to_string(rank % 2) +
                           " LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
                           " POD=" + c.worker_name(rank % 2) + " ";
    EXPECT_NE(out.find(expected), std::string::npos) << "missing: " << expected << "in:\n" << out;
  }
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, RanksThatCannotBePlacedFailTheJobSayingWhy) {
  TestCluster c;
  // STRICT_SPREAD: a pod per rank, 4 ranks, 2 pods.
  auto& head = c.start_head({"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2",
                             "--placement", "STRICT_SPREAD", "--bundle", R"({"CPU": 0.5})", "--",
                             "echo should not run"});
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  std::string out = c.output(head);
  EXPECT_NE(out.find("cannot place ranks: STRICT_SPREAD placement of 4 ranks"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("should not run"), std::string::npos) << out;
  EXPECT_NE(out.find("Job status:  failed\n"), std::string::npos) << out;
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, AtlctlFindsTheJobFromAPlainShellOfAPod) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--", "sleep 300"});
  ASSERT_TRUE(c.wait_for_status("command")) << c.output(head);
  const std::string file = c.dir() + "/job.json";
  std::string pointer = read_file(file);
  EXPECT_NE(pointer.find(c.head_address()), std::string::npos) << pointer;
  EXPECT_NE(pointer.find(c.job_id()), std::string::npos) << pointer;
  // A shell with nothing set: the address and credentials come from the file.
  auto plain = [&](std::vector<std::string> env) {
    std::vector<std::string> argv = {std::string(ATL_BIN_DIR) + "/atlctl", "status"};
    env.insert(env.begin(), {"ATL_ADDRESS=", "ATL_TLS_DIR="});  // the test's own come after
    auto& p = c.start("atlctl", argv, env);
    return std::pair{c.wait_exit(p), c.output(p)};
  };
  auto [code, out] = plain({});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "Job status:  command\n");
  // $ATL_ADDRESS comes before the file (here: a port nobody listens on), and
  // another job's credentials are never taken for it.
  auto [env_code, env_out] = plain({"ATL_ADDRESS=127.0.0.1:1"});
  EXPECT_EQ(env_code, 2) << env_out;
  EXPECT_NE(env_out.find("no TLS credentials"), std::string::npos) << env_out;
  // The job's own file is found by its id, too.
  auto [id_code, id_out] = plain({"ATL_JOB_ID=" + c.job_id()});
  EXPECT_EQ(id_code, 0) << id_out;
  // A damaged file is named, not silently skipped.
  ::mkdir((c.dir() + "/damaged").c_str(), 0700);
  std::string damaged = c.dir() + "/damaged/job.json";
  std::ofstream(damaged) << "{\"address\": 5}";
  auto [bad_code, bad_out] = plain({"ATL_JOB_FILE=" + damaged});
  EXPECT_EQ(bad_code, 2) << bad_out;
  EXPECT_NE(bad_out.find(damaged + ": field 'address' is not text"), std::string::npos) << bad_out;
  // No file at all: the message says where one would be.
  auto [none_code, none_out] = plain({"ATL_JOB_FILE=" + c.dir() + "/none/job.json"});
  EXPECT_EQ(none_code, 2) << none_out;
  EXPECT_NE(none_out.find("run in a pod of the job"), std::string::npos) << none_out;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
  // Its writer withdrew it at exit (the head: the worker on the same host
  // found the pointer already right and left it).
  EXPECT_NE(::access(file.c_str(), F_OK), 0) << read_file(file);
}

TEST(JobLifecycle, OneRankFailingFailsTheJobAndStopsTheOthers) {
  TestCluster c;
  // Ranks other than 3 wait until stopped and say so; rank 3 fails once they all started.
  std::string marker = c.dir() + "/started";
  std::string script = "trap 'echo got-term; exit 0' TERM; touch " + marker + ".$RANK; " +
                       "if [ \"$RANK\" = 3 ]; then while [ $(ls " + marker +
                       ".* | wc -l) -lt 4 ]; do sleep 0.05; done; echo failing; exit 3; fi; " +
                       "sleep 300 & wait";
  auto& head =
      c.start_head({"--workers", "2", "--nproc-per-node", "2", "--grace", "20s", "--", script});
  auto& w0 = c.start_worker(0);
  auto& w1 = c.start_worker(1);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_EQ(c.wait_exit(w0), 1);
  EXPECT_EQ(c.wait_exit(w1), 1);
  std::string out = c.output(head);
  EXPECT_NE(out.find("rank 3 on pod " + c.worker_name(1) + " ended with exit code 3"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Job status:  failed\n"), std::string::npos) << out;
  for (int rank : {0, 1, 2}) {
    EXPECT_NE(out.find("[rank " + std::to_string(rank) + "] got-term"), std::string::npos)
        << "rank " << rank << " was not stopped:\n"
        << out;
  }
  EXPECT_TRUE(c.no_strays_within());
}

// A job file with a spec runs on one machine as written: --local-workers
// pods offer what the spec states (they used to offer the machine, and the
// pre-flight refused them: "cpus: the pod has 2, the job's spec asks for 1").
TEST(JobLifecycle, LocalWorkersOfferTheJobsSpec) {
  TestCluster c;
  std::ofstream(c.dir() + "/job.json")
      << R"({"workers": 2, "spec": {"cpus": 1, "memory": "2Gi", "shm": "64Mi"},
             "entrypoint": "echo rank $RANK up"})";
  auto& head = c.start_head({"--job", c.dir() + "/job.json", "--local-workers", "2"});
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  const std::string out = c.output(head);
  EXPECT_NE(out.find("(1 cpus, 0 gpus)"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] rank 1 up"), std::string::npos) << out;
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, DriverModeRunsOnceOnTheHeadWithAtlAddress) {
  TestCluster c;
  auto& head = c.start_head({"--mode", "driver", "--workers", "1", "--local-workers", "1", "--",
                             "echo driver sees $ATL_ADDRESS; atlctl status; exit 7"});
  EXPECT_EQ(c.wait_exit(head), 1);
  std::string out = c.output(head);
  EXPECT_NE(out.find("[driver] driver sees " + c.head_address() + "\n"), std::string::npos) << out;
  // The driver reaches the supervisor with atlctl and no flags, as in a pod.
  EXPECT_NE(out.find("[driver] Job status:  command\n"), std::string::npos) << out;
  EXPECT_NE(out.find("the driver on pod " + c.job_id() + "-head-0 ended with exit code 7"),
            std::string::npos)
      << out;
  EXPECT_NE(read_file(c.state_dir() + "/logs/driver.log").find("driver sees"), std::string::npos);
  EXPECT_TRUE(c.no_strays_within());
}

// Driver mode is a first-class job: the driver gets seed 002's cluster-level
// variables, and atlctl run/check target the worker pods (-r indexes pods).
TEST(JobLifecycle, DriverModeHasClusterVariablesAndDebugCommandsTargetThePods) {
  TestCluster c;
  auto& head = c.start_head({"--mode", "driver", "--workers", "2", "--local-workers", "2",
                             "--linger", "60s", "--",
                             "echo master=$MASTER_ADDR:$MASTER_PORT nccl=$NCCL_SOCKET_IFNAME "
                             "gloo=$GLOO_SOCKET_IFNAME world=$WORLD_SIZE rank=$RANK; "
                             "exec sleep 600"});
  std::string addr = c.head_address();
  ASSERT_TRUE(c.wait_for_output(head, "[driver] master=")) << c.output(head);
  std::string host = addr.substr(0, addr.rfind(':'));
  // Seed 002's WORLD_SIZE and RANK: the job's pods, the head's index 0.
  EXPECT_NE(
      c.output(head).find("[driver] master=" + host + ":29500 nccl=lo gloo=lo world=3 rank=0"),
      std::string::npos)
      << c.output(head);
  // status -v: the driver's row has its columns apart.
  auto verbose = c.atlctl({"--address", addr, "status", "-v"});
  EXPECT_NE(verbose.output.find("  driver    " + c.job_id() + "-head-0 "), std::string::npos)
      << verbose.output;
  ASSERT_EQ(c.atlctl({"--address", addr, "stop"}).exit_code, 0);
  auto run = c.atlctl({"--address", addr, "run", "-r", "1",
                       "echo on $ATL_POD_NAME to $MASTER_ADDR as $RANK of $WORLD_SIZE"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("on " + c.worker_name(1) + " to " + host + " as 2 of 3"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find(c.worker_name(0)), std::string::npos) << run.output;
  auto logs = c.atlctl({"--address", addr, "logs", "--run", "1", "-r", "1"});
  EXPECT_NE(logs.output.find("on " + c.worker_name(1)), std::string::npos) << logs.output;
  ASSERT_EQ(c.atlctl({"--address", addr, "stop"}).exit_code, 0);       // debugCommand -> debugStop
  auto bad = c.atlctl({"--address", addr, "run", "-r", "2", "true"});  // two pods: 0 and 1
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  auto check = c.atlctl({"--address", addr, "check", "-t", "gpu"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  for (int w = 0; w < 2; ++w)
    EXPECT_NE(check.output.find(c.worker_name(w) + " GPU 0 (cpu): check PASS"), std::string::npos)
        << check.output;
  head.process->signal(SIGTERM);
  EXPECT_NE(c.wait_exit(head), -1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, DriverModeSucceedsWithTheDriversExitCode) {
  TestCluster c;
  auto& head = c.start_head({"--mode", "driver", "--workers", "0", "--", "true"});
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A job that ends before the dashboard's thread has begun to listen (a
// driver of `true` on a loaded machine: the thread scheduled late, here
// made late by a test hook): cpp-httplib's stop() did nothing then, the
// thread listened afterwards in the lobby's accept loop for good, and the
// head never exited (once in ~100 runs under load). The head exits.
TEST(JobLifecycle, AJobThatEndsBeforeTheDashboardListensStillEndsTheHead) {
  TestCluster c;
  auto& head = c.start_head({"--mode", "driver", "--workers", "0", "--", "true"},
                            {"ATL_TEST_DASHBOARD_LATE_LISTEN=500"});
  EXPECT_EQ(c.wait_exit(head, 30s), 0) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A ready timeout is a counted fault (seed 002: a clear error, then retried
// per the policy): with the budget spent the job fails naming the pod each time.
TEST(JobLifecycle, ReadyTimeoutNamesTheMissingPodEachTimeUntilTheBudgetIsSpent) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "2", "--ready-timeout", "2s", "--max-restarts", "1", "--", "true"});
  auto& w0 = c.start_worker(0);
  EXPECT_EQ(c.wait_exit(head), 1);
  EXPECT_EQ(c.wait_exit(w0), 1);
  std::string out = c.output(head);
  EXPECT_NE(out.find("workers not ready after 2s: missing " + c.worker_name(1) + "\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("job restarting (restart 1/1): workers not ready after 2s: missing " +
                     c.worker_name(1)),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("restart not ready after 2s: pods not back: " + c.worker_name(1) +
                     "; the restart budget is spent (1/1 restarts used)"),
            std::string::npos)
      << out;
  EXPECT_TRUE(c.no_strays_within());
}

// ...and within the budget the job waits again and runs once the pod comes.
TEST(JobLifecycle, AReadyTimeoutRestartsAndThePodThatComesLaterRunsTheJob) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--ready-timeout", "2s", "--", "echo ran $RANK"});
  auto& w0 = c.start_worker(0);
  ASSERT_TRUE(c.wait_for_output(head, "job restarting (restart 1/10): workers not ready"))
      << c.output(head);
  auto& w1 = c.start_worker(1);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  std::string out = c.output(head);
  EXPECT_NE(out.find("job restarted: attempt 2 (restart 1/10)"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] ran 1"), std::string::npos) << out;
  c.wait_exit(w0);
  c.wait_exit(w1);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, HundredThousandLinesArriveCompleteAndInOrder) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--", "seq 1 100000"});
  ASSERT_EQ(c.wait_exit(head, 240s), 0);
  std::string expected;
  for (int i = 1; i <= 100000; ++i) expected += std::to_string(i) + "\n";
  std::string log = read_file(c.state_dir() + "/logs/rank-0.log");
  EXPECT_EQ(count_lines(log), 100000);
  EXPECT_TRUE(log == expected) << "rank-0.log differs from seq 1 100000";
  // The echo on the head's stdout has every line too, in order.
  std::string out = c.output(head);
  std::string echoed;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("[rank 0] ", 0) == 0) echoed += line.substr(9) + "\n";
  EXPECT_TRUE(echoed == expected) << "echoed " << count_lines(echoed) << " lines";
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, StatusFollowsTheJobThroughItsStates) {
  TestCluster c;
  std::string go = c.dir() + "/go";
  auto& head = c.start_head({"--workers", "1", "--linger", "60s", "--",
                             "while [ ! -f " + go + " ]; do sleep 0.05; done; echo done"});
  std::string addr = c.head_address();
  EXPECT_TRUE(c.wait_for_status("pending"));
  c.start_worker(0);
  EXPECT_TRUE(c.wait_for_status("command"));
  // Inside a rank, atlctl needs no flags (ATL_ADDRESS); here we pass it.
  auto json = c.atlctl({"--address", addr, "status", "--json"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_NE(json.output.find("\"state\": \"command\""), std::string::npos) << json.output;
  EXPECT_NE(json.output.find(c.worker_name(0)), std::string::npos) << json.output;
  std::ofstream(go) << "go\n";
  EXPECT_TRUE(c.wait_for_status("succeeded"));
  // Logs stay readable while the head lingers.
  auto logs = c.atlctl({"--address", addr, "logs"});
  EXPECT_EQ(logs.exit_code, 0);
  EXPECT_EQ(logs.output, "[rank 0] done\n");
  // A signal ends the linger at once; the outcome stands.
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  auto gone = c.atlctl({"--address", addr, "status"});
  EXPECT_EQ(gone.exit_code, 4);
  EXPECT_EQ(count_lines(gone.output), 1) << gone.output;
  EXPECT_NE(gone.output.find("cannot reach the supervisor at " + addr +
                             ": nothing answers there (the job's head ended, or the address is "
                             "wrong)"),
            std::string::npos)
      << gone.output;
  EXPECT_EQ(gone.output.find("system_error"), std::string::npos) << gone.output;  // CAF's words
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, LogsTailAndRankSelection) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--nproc-per-node", "3", "--local-workers", "1",
                             "--linger", "60s", "--", "for i in 1 2 3 4; do echo r$RANK-$i; done"});
  std::string addr = c.head_address();
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded"));
  auto tail = c.atlctl({"--address", addr, "logs", "-r", "0,2", "--tail", "2"});
  EXPECT_EQ(tail.exit_code, 0);
  EXPECT_EQ(tail.output, "[rank 0] r0-3\n[rank 0] r0-4\n[rank 2] r2-3\n[rank 2] r2-4\n");
  auto one = c.atlctl({"--address", addr, "logs", "-r", "1"});
  EXPECT_EQ(one.output, "[rank 1] r1-1\n[rank 1] r1-2\n[rank 1] r1-3\n[rank 1] r1-4\n");
  auto follow = c.atlctl({"--address", addr, "logs", "-f", "-r", "1", "--tail", "1"});
  EXPECT_EQ(follow.exit_code, 0);  // the job is over: follow ends by itself
  EXPECT_EQ(follow.output, "[rank 1] r1-4\n");
  auto bad = c.atlctl({"--address", addr, "logs", "-r", "5"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("rank 5"), std::string::npos) << bad.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 0);
  EXPECT_TRUE(c.no_strays_within());
}

// Seed 002's MASTER_ADDR is the master pod's name where names resolve: a
// pod as Kubernetes makes one behind a headless service (its hostname its
// name, the name resolving to its address; here a UTS and a mount namespace
// of its own with its own /etc/hosts) hands its ranks its name; a pod
// without one hands them its address.
TEST(JobLifecycle, MasterAddrIsTheMasterPodsNameWhereItResolves) {
  if (::geteuid() != 0 || std::system("unshare --uts --mount true 2>/dev/null") != 0)
    GTEST_SKIP() << "needs root and unshare (a pod's own hostname and /etc/hosts)";
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--", "echo master=$MASTER_ADDR"});
  const std::string address = c.head_address();
  const std::string pod = c.worker_name(0);
  const std::string hosts = c.dir() + "/hosts";
  std::ofstream(hosts) << "127.0.0.1 localhost\n127.0.0.1 " << pod << "\n";
  c.start("worker0",
          {"unshare", "--uts", "--mount", "sh", "-c",
           "hostname " + pod + " && mount --bind " + hosts + " /etc/hosts && exec " +
               bin("workernode") + " --head " + address + " --name " + pod + " --node host-0"});
  c.start_worker(1);
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded")) << c.output(head);
  const std::string out = c.output(head);
  EXPECT_NE(out.find("[rank 0] master=" + pod), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] master=" + pod), std::string::npos) << out;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
}

// atlctl logs -p: everything on the named pods: each one's own log (its node
// agent's, the head's), then what runs there (here their ranks).
TEST(JobLifecycle, LogsOfAPodAreItsOwnLogAndItsRanks) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2",
                             "--linger", "60s", "--", "echo r$RANK"});
  std::string addr = c.head_address();
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded"));
  // The agents' and the head's own lines, in files of their own, never echoed as output.
  std::string agent = read_file(c.state_dir() + "/logs/pod-worker-1.log");
  EXPECT_NE(agent.find("[node] [info] joined the job as " + c.worker_name(1)), std::string::npos)
      << agent;
  std::string head_log = read_file(c.state_dir() + "/logs/head.log");
  EXPECT_NE(head_log.find("[supervisor] [info] job " + c.job_id() + " (spmd mode) waiting for 2"),
            std::string::npos)
      << head_log;
  EXPECT_EQ(c.output(head).find("[pod worker-"), std::string::npos) << c.output(head);
  auto ranks_only = [](const std::string& out) {
    std::string kept;
    size_t start = 0;
    while (start < out.size()) {
      size_t end = out.find('\n', start) + 1;
      if (out.compare(start, 6, "[rank ") == 0) kept += out.substr(start, end - start);
      start = end;
    }
    return kept;
  };
  auto second = c.atlctl({"--address", addr, "logs", "--pod", c.worker_name(1)});
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(second.output.rfind("[pod worker-1] ", 0), 0u) << second.output;  // its own log first
  EXPECT_NE(second.output.find("joined the job as " + c.worker_name(1)), std::string::npos);
  EXPECT_EQ(ranks_only(second.output), "[rank 2] r2\n[rank 3] r3\n");
  auto both =
      c.atlctl({"--address", addr, "logs", "-p", c.worker_name(0) + "," + c.worker_name(1)});
  EXPECT_EQ(ranks_only(both.output), "[rank 0] r0\n[rank 1] r1\n[rank 2] r2\n[rank 3] r3\n");
  auto all = c.atlctl({"--address", addr, "logs", "-p", "all"});
  EXPECT_EQ(ranks_only(all.output), ranks_only(both.output));
  EXPECT_EQ(all.output.rfind("[head] ", 0), 0u) << all.output;
  // The head pod, by its name or as "head": the head's own log.
  auto head_pod = c.atlctl({"--address", addr, "logs", "-p", "head"});
  EXPECT_EQ(head_pod.exit_code, 0) << head_pod.output;
  EXPECT_NE(head_pod.output.find("[head] [20"), std::string::npos) << head_pod.output;
  EXPECT_EQ(c.atlctl({"--address", addr, "logs", "-p", c.job_id() + "-head-0"}).output.substr(0, 7),
            "[head] ");
  // Negative: a pod not in the job, a bad name, and -p with -r.
  auto stranger = c.atlctl({"--address", addr, "logs", "-p", "other-worker-0"});
  EXPECT_EQ(stranger.exit_code, 2);
  EXPECT_NE(stranger.output.find("'other-worker-0' is not a pod of this job"), std::string::npos)
      << stranger.output;
  auto bad = c.atlctl({"--address", addr, "logs", "-p", "Bad_Name"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(count_lines(bad.output), 1) << bad.output;
  auto mixed = c.atlctl({"--address", addr, "logs", "-p", c.worker_name(0), "-r", "0"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.output.find("cannot be combined"), std::string::npos) << mixed.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 0);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, LostWorkerFailsTheJobNamingThePod) {
  TestCluster c;
  // No restarts: the loss itself is what this test is about.
  auto& head = c.start_head({"--workers", "2", "--max-restarts", "0", "--", "echo up; sleep 300"});
  auto& w0 = c.start_worker(0);
  auto& w1 = c.start_worker(1);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 1] up"));
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] up"));
  w1.process->signal(SIGKILL);
  EXPECT_EQ(c.wait_exit(head), 1);
  EXPECT_EQ(c.wait_exit(w0), 1);
  std::string out = c.output(head);
  EXPECT_NE(out.find("pod " + c.worker_name(1) + " was lost"), std::string::npos) << out;
  // The killed worker's rank died with it (pdeathsig), the other was stopped.
  EXPECT_TRUE(c.no_strays_within());
}

// A script written for torchrun finds torchelastic's variables in every
// rank, and real torch reads them: env:// rendezvous (no agent store), one
// intra-op thread per rank when ranks share a pod (OMP_NUM_THREADS=1).
TEST(JobLifecycle, TorchrunsVariablesReachEveryRank) {
  TestCluster c;
  std::string script = std::string(ATL_SOURCE_DIR) + "/tests/integration/torchrun_rank.py";
  auto& head = c.start_head({"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2",
                             "--max-restarts", "3", "--", "/usr/bin/python3", script});
  ASSERT_EQ(c.wait_exit(head, 240s), 0) << c.output(head);
  std::string out = c.output(head);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string want =
        "[rank " + std::to_string(rank) + "] TORCHRUN rank=" + std::to_string(rank) +
        " GROUP_RANK=" + std::to_string(rank / 2) +
        " GROUP_WORLD_SIZE=2 ROLE_NAME=default ROLE_RANK=" + std::to_string(rank) +
        " ROLE_WORLD_SIZE=4 TORCHELASTIC_RUN_ID=" + c.job_id() +
        " TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=3 "
        "group_rank_sum=2 torch_threads=1";
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
  }
  EXPECT_TRUE(c.no_strays_within());
}

// torchrun's failure report: a rank whose main raises under torchelastic's
// @record names its exception in the job's failure line (its first line
// only: the message's second line ends nowhere but in the rank's own log),
// as torchrun's summary does; the file is the node's, removed after the read.
TEST(JobLifecycle, ARanksRecordedExceptionIsTheFailuresReason) {
  TestCluster c;
  std::string script = std::string(ATL_SOURCE_DIR) + "/tests/integration/torch_failing_rank.py";
  auto& head = c.start_head({"--workers", "1", "--nproc-per-node", "2", "--local-workers", "1",
                             "--", "/usr/bin/python3", script});
  ASSERT_EQ(c.wait_exit(head, 240s), 1) << c.output(head);
  std::string out = c.output(head);
  EXPECT_NE(out.find("rank 1 on pod " + c.worker_name(0) +
                     " ended with exit code 1: RuntimeError: loss is nan at step 7 on rank 1\n"),
            std::string::npos)
      << out;
  // Rank 0 had the node's path (and it is gone with its rank).
  const std::string said = "[rank 0] rank 0 done, error file at ";
  auto at = out.find(said);
  ASSERT_NE(at, std::string::npos) << out;
  std::string path = out.substr(at + said.size(), out.find('\n', at) - at - said.size());
  EXPECT_NE(path.find("/atl-error-" + c.worker_name(0) + "-rank-0-1.json"), std::string::npos)
      << path;
  EXPECT_FALSE(std::filesystem::exists(path)) << path;
  EXPECT_TRUE(c.no_strays_within());
}

// A start that talks: the job id, the exact command that joins each pod
// atl does not start itself (run here as printed), and every 10 s who has
// joined and who is missing.
TEST(JobLifecycle, TheStartSaysWhatItWaitsForAndHowToJoin) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--local-workers", "1", "--", "echo ran $RANK"});
  const std::string pod = c.job_id() + "-worker-1";
  ASSERT_TRUE(c.wait_for_output(
      head, "waiting for workers: 1/2 joined, missing " + pod + " (10s of 5m)", 60s))
      << c.output(head);
  std::string out = c.output(head);
  EXPECT_LT(out.find("job " + c.job_id() + "\n"), out.find("listening on ")) << out;
  EXPECT_NE(out.find("job " + c.job_id() + ": waiting for 1 worker pod; start each with:\n"),
            std::string::npos)
      << out;
  const std::string mark = "  workernode --head ";
  const auto at = out.find(mark);
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at + 2, out.find('\n', at) - at - 2);
  EXPECT_NE(line.find("--name " + pod + " --tls-dir /"), std::string::npos) << line;
  // The printed line, as a newcomer pastes it.
  auto& worker = c.start("pasted", {"/bin/sh", "-c", line});
  ASSERT_EQ(c.wait_exit(head, 120s), 0) << c.output(head);
  out = c.output(head);
  EXPECT_NE(out.find("[rank 1] ran 1"), std::string::npos) << out;
  // Each pre-flight step as it passed, in order, before the ranks ran.
  const auto spec = out.find("pre-flight: 2 pods match the job's spec\n");
  const auto ring =
      out.find("pre-flight: the network ring passed: 2 pods, each reached the next over TCP\n");
  const auto checks = out.find(
      "pre-flight: node checks passed on 2 pods (working dir, GPUs, the head reachable)\n");
  ASSERT_NE(checks, std::string::npos) << out;
  EXPECT_LT(spec, ring) << out;
  EXPECT_LT(ring, checks) << out;
  EXPECT_LT(checks, out.find("[rank 1] ran 1")) << out;
  c.wait_exit(worker, 60s);
  EXPECT_TRUE(c.no_strays_within());
  // A big job's start lists a few pods, not thousands.
  TestCluster big;
  auto& many = big.start_head({"--workers", "8", "--ready-timeout", "1s", "--", "true"});
  big.wait_exit(many, 60s);
  const std::string said = big.output(many);
  std::size_t lines = 0;
  for (auto at = said.find("\n  workernode --head "); at != std::string::npos;
       at = said.find("\n  workernode --head ", at + 1))
    ++lines;
  EXPECT_EQ(lines, 4u) << said;
  EXPECT_NE(said.find("  ... and 4 more, each with --name " + big.job_id() + "-worker-4 up to " +
                      big.job_id() + "-worker-7\n"),
            std::string::npos)
      << said;
}

namespace {
// The number after `mark` in `out` (0: none).
int pid_after(const std::string& out, const std::string& mark) {
  auto at = out.find(mark);
  return at == std::string::npos ? 0 : std::atoi(out.c_str() + at + mark.size());
}
}  // namespace

// Each running rank's figures in status (--json, -v): its own process (not
// atl's guard), lines/s against a rank of known rate (a line every 0.1 s),
// memory; a rank SIGSTOPped while its peers print is marked, they are not.
TEST(JobLifecycle, StatusShowsEachRanksFiguresAndMarksAStoppedOne) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2",
                             "--hang-timeout", "0", "--",
                             "echo \"pid=$$\"; while true; do echo tick; sleep 0.1; done"});
  auto vitals_of = [&](int rank) {
    auto out = c.atlctl({"--address", c.head_address(), "status", "--json"}).output;
    auto j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_object())
      for (const auto& r : j["ranks"])
        if (r.value("rank", -1) == rank && r.contains("vitals")) return r["vitals"];
    return nlohmann::json();
  };
  // Every rank with a rate over a full window.
  auto deadline = std::chrono::steady_clock::now() + 90s;
  bool rated = false;
  while (!rated && std::chrono::steady_clock::now() < deadline) {
    rated = true;
    for (int rank = 0; rank < 4; ++rank) {
      auto v = vitals_of(rank);
      rated = rated && v.is_object() && v["lines_per_s"].get<double>() >= 3;
    }
    if (!rated) std::this_thread::sleep_for(500ms);
  }
  ASSERT_TRUE(rated) << c.output(head);
  std::string out = c.output(head);
  int pid1 = 0;
  for (int rank = 0; rank < 4; ++rank) {
    auto v = vitals_of(rank);
    const int pid = pid_after(out, "[rank " + std::to_string(rank) + "] pid=");
    EXPECT_EQ(v["user_pid"].get<int>(), pid) << v.dump();
    if (rank == 1) pid1 = pid;
    // 10 lines/s at most; generous below for 2 busy cores.
    EXPECT_LE(v["lines_per_s"].get<double>(), 11) << v.dump();
    EXPECT_GT(v["rss_bytes"].get<std::int64_t>(), 0) << v.dump();
    EXPECT_EQ(v["mark"], "") << v.dump();
  }
  ASSERT_GT(pid1, 0);
  // Rank 1 is on pod 0; what it and status say is its pod's number.
  const int host1 = c.host_pid(0, pid1);
  ASSERT_GT(host1, 0);
  ASSERT_EQ(::kill(host1, SIGSTOP), 0);
  // Silent after 15 s while its peers print; the others never marked.
  std::string verbose;
  deadline = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < deadline) {
    verbose = c.atlctl({"--address", c.head_address(), "status", "-v"}).output;
    if (verbose.find("running (silent)") != std::string::npos) break;
    std::this_thread::sleep_for(500ms);
  }
  ::kill(host1, SIGCONT);
  std::istringstream lines(verbose);
  int marked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("running (") == std::string::npos) continue;
    ++marked;
    EXPECT_EQ(line.rfind("  1 ", 0), 0u) << verbose;
    EXPECT_NE(line.find(std::to_string(pid1)), std::string::npos) << verbose;
  }
  EXPECT_EQ(marked, 1) << verbose;
  head.process->signal(SIGTERM);
  c.wait_exit(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, SigtermOnTheHeadStopsEverything) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--", "echo up; sleep 300"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] up"));
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1);
  EXPECT_NE(c.output(head).find("cancelled: SIGTERM"), std::string::npos) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(JobLifecycle, PytorchDdpRunsUnmodified) {
  // Real torch.distributed with the gloo backend, initialised from atl's env.
  TestCluster c;
  std::string script = std::string(ATL_SOURCE_DIR) + "/examples/ddp/train.py";
  auto& head = c.start_head({"--workers", "2", "--nproc-per-node", "2", "--local-workers", "2",
                             "--", "/usr/bin/python3", script});
  ASSERT_EQ(c.wait_exit(head, 240s), 0) << c.output(head);
  std::string out = c.output(head);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(out.find("[rank " + std::to_string(rank) + "] rank " + std::to_string(rank) +
                       "/4: allreduce sum 10 (expected 10), parameters in sync"),
              std::string::npos)
        << out;
  }
  EXPECT_TRUE(c.no_strays_within());
}
