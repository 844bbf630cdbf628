// The head never hangs, never dies silently and never loses a line without
// saying so: an exception in the supervisor, an unwritable state dir, a full
// disk and a stdout nobody reads, each on real processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "atl/core/host_port.hpp"
#include "atl/os/reach_probe.hpp"
#include "test_cluster.hpp"

namespace atl::test {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Robustness, ASupervisorExceptionEndsTheHeadWithExitOneNamingIt) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--grace", "1s", "--", "sleep 600"},
                            {"ATL_TESTING_SUPERVISOR_THROW=info"});
  auto& worker = c.start_worker(0);
  ASSERT_TRUE(c.wait_for_output(head, "launching 1 ranks")) << c.output(head);
  auto thrown_at = Clock::now();
  auto r = c.atlctl({"--address", c.head_address(), "status", "--json"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(c.wait_exit(head, 60s), 1) << c.output(head);
  // The bound: --grace (1 s) + 5 s, with room for a loaded 2-core machine.
  EXPECT_LT(Clock::now() - thrown_at, 15s);
  EXPECT_NE(c.output(head).find("job failed: internal error in the supervisor: injected"),
            std::string::npos)
      << c.output(head);
  EXPECT_NE(c.output(head).find("Job status:  failed"), std::string::npos) << c.output(head);
  int w = c.wait_exit(worker, 60s);
  EXPECT_TRUE(w == 1 || w == 3) << w << "\n" << c.output(worker);
  EXPECT_TRUE(c.no_strays_within());
}

// A command that is not valid UTF-8 is the user's business: status --json
// still answers (bytes replaced), and the job goes on.
TEST(Robustness, InvalidUtf8InACommandDoesNotBreakStatus) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--", "sleep 600"});
  ASSERT_TRUE(c.wait_for_status("command"));
  auto run = c.atlctl({"--address", c.head_address(), "run", "-f", "echo caf\xe9"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  auto json = c.atlctl({"--address", c.head_address(), "status", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"state\": \"command\""), std::string::npos) << json.output;
  EXPECT_TRUE(c.wait_for_status("command"));
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1);
}

TEST(Robustness, AnUnwritableStateDirIsRefusedBeforeAnythingStarts) {
  TestCluster c;
  std::string blocker = c.dir() + "/a-file";
  std::ofstream(blocker) << "not a folder\n";
  auto& head = c.start("headnode", {bin("headnode"), "--port", "0", "--state-dir",
                                    blocker + "/state", "--workers", "1", "--", "true"});
  EXPECT_EQ(c.wait_exit(head), 2);
  EXPECT_EQ(count_lines(c.output(head)), 1) << c.output(head);
  EXPECT_NE(c.output(head).find("--state-dir"), std::string::npos) << c.output(head);
  EXPECT_EQ(c.output(head).find("listening on"), std::string::npos) << c.output(head);
}

// Unmounts a tmpfs on scope exit (before the cluster removes its files).
struct TmpfsMount {
  std::string path;
  bool mounted = false;
  ~TmpfsMount() {
    if (mounted) ::umount2(path.c_str(), MNT_DETACH);
  }
};

TEST(Robustness, AFullDiskFailsTheJobNamingTheFile) {
  TestCluster c;
  TmpfsMount disk{c.dir() + "/small"};
  ::mkdir(disk.path.c_str(), 0755);
  if (::mount("tmpfs", disk.path.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here: " << std::strerror(errno);
  disk.mounted = true;
  auto& head =
      c.start("headnode", {bin("headnode"), "--port", "0", "--state-dir", disk.path + "/state",
                           "--workers", "1", "--local-workers", "1", "--",
                           "seq 1 400000 | sed 's/$/ some padding to fill the disk/'"});
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  std::string out = c.output(head);
  EXPECT_NE(out.find("job failed: logs are incomplete: cannot write " + disk.path +
                     "/state/logs/rank-0.log: No space left on device"),
            std::string::npos)
      << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
}

// A stdout nobody reads may hold up only the echo: the files get every line,
// and the job ends on time with its own exit status.
TEST(Robustness, AStalledStdoutReaderHoldsUpNeitherTheLogsNorTheEnd) {
  TestCluster c;
  const int lines = 200000;
  std::string cmd = "'" + bin("headnode") + "' --port 0 --state-dir '" + c.state_dir() +
                    "' --workers 1 --local-workers 1 -- 'seq 1 " + std::to_string(lines) +
                    "' > >(sleep 600); echo head-exit=$?";
  auto started = Clock::now();
  auto& shell = c.start("bash", {"/bin/bash", "-c", cmd});
  EXPECT_EQ(c.wait_exit(shell, 120s), 0) << c.output(shell);
  EXPECT_NE(c.output(shell).find("head-exit=0"), std::string::npos) << c.output(shell);
  // Ended by itself, not by the shutdown watchdog.
  EXPECT_EQ(c.output(shell).find("shutdown took longer"), std::string::npos) << c.output(shell);
  EXPECT_LT(Clock::now() - started, 60s);
  EXPECT_EQ(count_lines(read_file(c.state_dir() + "/logs/rank-0.log")), lines);
}

// A driver's working dir on the head is checked off the supervisor's thread
// (a hung mount must fail the pre-flight, not stall the head): a dir nobody
// can write in fails the job naming the head pod and the dir.
TEST(Robustness, AnUnwritableWorkingDirOnTheHeadFailsThePreflightNamingIt) {
  TestCluster c;
  auto& head = c.start_head({"--mode", "driver", "--workers", "1", "--local-workers", "1",
                             "--working-dir", "/sys", "--", "true"});
  EXPECT_EQ(c.wait_exit(head, 120s), 1) << c.output(head);
  const std::string out = c.output(head);
  EXPECT_NE(out.find("head pod " + c.job_id() + "-head-0"), std::string::npos) << out;
  EXPECT_NE(out.find("working dir /sys is not writable"), std::string::npos) << out;
  EXPECT_TRUE(c.no_strays_within());
}

// --local-workers' pods start beside the head's own start-up and wait at a
// start gate until it listens (start_gate.hpp). A head that fails before
// that (here: its dashboard's port is taken) takes them along at once: they
// add nothing to its one line, and none is left trying to connect.
TEST(Robustness, LocalPodsOfAHeadThatFailsToStartEndWithItQuietly) {
  TestCluster c;
  auto taken = atl::os::ProbeListener::open("127.0.0.1");
  ASSERT_TRUE(taken.ok()) << taken.error();
  auto& head =
      c.start_head({"--workers", "2", "--local-workers", "2", "--dashboard-bind", "127.0.0.1",
                    "--dashboard-port", std::to_string(taken->port()), "--", "true"});
  EXPECT_EQ(c.wait_exit(head, 60s), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within()) << c.output(head);
  const std::string out = c.output(head);
  EXPECT_NE(out.find("--dashboard-port: cannot listen on"), std::string::npos) << out;
  EXPECT_EQ(out.find("workernode"), std::string::npos) << out;
}

// The state store opens on a thread while the head starts its actor system:
// a store that cannot open is still the one line, exit 2, and the local
// pods waiting at their gate end with the head, quietly.
TEST(Robustness, AStoreThatCannotOpenIsOneLineAndTheLocalPodsEndQuietly) {
  TestCluster c;
  std::filesystem::create_directories(c.state_dir() + "/state.db");  // not a database
  // No dashboard: another test's head may hold 8265, and its warning would
  // be a second line.
  auto& head = c.start_head(
      {"--workers", "2", "--local-workers", "2", "--dashboard-port", "off", "--", "true"});
  EXPECT_EQ(c.wait_exit(head, 60s), 2) << c.output(head);
  EXPECT_TRUE(c.no_strays_within()) << c.output(head);
  const std::string out = c.output(head);
  EXPECT_NE(out.find("headnode: --state-dir: cannot open"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

// The gate is the local pods' alone: their ranks do not inherit its variable.
TEST(Robustness, TheStartGateStopsAtTheLocalPod) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "1", "--local-workers", "1", "--", "echo gate=${ATL_START_GATE_FD:-none}"});
  EXPECT_EQ(c.wait_exit(head, 120s), 0) << c.output(head);
  EXPECT_NE(c.output(head).find("[rank 0] gate=none"), std::string::npos) << c.output(head);
}

// Established TCP connections whose local port is `port`, in this network
// namespace (/proc/net/tcp and tcp6: state 01).
int established_on(int port) {
  int count = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      auto colon = local.rfind(':');
      if (colon != std::string::npos && state == "01" &&
          std::stoi(local.substr(colon + 1), nullptr, 16) == port)
        ++count;
    }
  }
  return count;
}

// The head's port, from the address it printed.
int port_of(const std::string& address) {
  auto parsed = atl::parse_host_port(address);
  EXPECT_TRUE(parsed.ok()) << address;
  return parsed.ok() ? parsed->port : -1;
}

// A local pod reaches the head it was forked by over its start gate, a socket
// pair (pod_line.hpp): no TCP connection, no TLS handshake; the job runs as
// over TCP (its ranks, atlctl through the head's door and through the pod's).
TEST(Robustness, LocalPodsReachTheirHeadOverTheirLineNotTcp) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "2", "--local-workers", "2", "--dashboard-port", "off", "--", "sleep 600"});
  ASSERT_TRUE(c.wait_for_status("command", 60s)) << c.output(head);
  const int port = port_of(c.head_address());
  EXPECT_EQ(established_on(port), 0) << c.output(head);
  auto run = c.atlctl({"run", "-f", "-r", "all", "echo over-the-line"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // Both pods' ranks answered.
  auto first = run.output.find("over-the-line");
  ASSERT_NE(first, std::string::npos) << run.output;
  EXPECT_NE(run.output.find("over-the-line", first + 1), std::string::npos) << run.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// A line that breaks (here: shut down from outside, as a dying socket would
// be) is a lost connection like a TCP one: the pod rejoins its head, over
// TCP and TLS now, and the job goes on to its end.
TEST(Robustness, APodWhoseLineBreaksRejoinsOverTcp) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--dashboard-port", "off",
                             "--", "sleep 3; echo done"});
  ASSERT_TRUE(c.wait_for_status("command", 60s)) << c.output(head);
  const int port = port_of(c.head_address());
  ASSERT_EQ(established_on(port), 0);
  // The pod's fd 3 is its line (the start gate it was born with).
  const int worker = c.worker_pid(0);
  ASSERT_GT(worker, 0);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, worker, 0));
  ASSERT_GE(pidfd, 0) << std::strerror(errno);
  const int line = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, 3, 0));
  ASSERT_GE(line, 0) << std::strerror(errno);
  ASSERT_EQ(::shutdown(line, SHUT_RDWR), 0) << std::strerror(errno);
  ::close(line);
  ::close(pidfd);
  // Rejoined over TCP (the head's one connection on its port), the job ends well.
  bool over_tcp = false;
  for (int i = 0; i < 300 && !over_tcp; ++i) {
    over_tcp = established_on(port) == 1;
    if (!over_tcp) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(over_tcp) << c.output(head);
  EXPECT_TRUE(c.wait_for_output(head, c.worker_name(0) + " rejoined from", 30s)) << c.output(head);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  EXPECT_NE(c.output(head).find("done"), std::string::npos) << c.output(head);
  EXPECT_TRUE(c.no_strays_within());
}

// The same on a worker pod: its agent checks the dir on a checker of its own
// (a hung mount must not stall its heartbeats), and the pre-flight names it.
TEST(Robustness, AnUnwritableWorkingDirOnAWorkerFailsThePreflightNamingThePod) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "1", "--local-workers", "1", "--working-dir", "/sys", "--", "true"});
  EXPECT_EQ(c.wait_exit(head, 120s), 1) << c.output(head);
  const std::string out = c.output(head);
  EXPECT_NE(out.find("pod " + c.job_id() +
                     "-worker-0 failed its check: working dir /sys is not "
                     "writable"),
            std::string::npos)
      << out;
  EXPECT_TRUE(c.no_strays_within());
}

// The head's stdout without atl's timestamped log lines: the local workers'
// (other processes sharing that terminal) and the supervisor's (another actor
// than the echo) may land inside a rank's unfinished line, between its echo
// and the rest of it.
std::string without_log_lines(const std::string& out) {
  static const std::regex log_line(
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[[a-z]+\] [^\n]*\n)");
  return std::regex_replace(out, log_line, "");
}

// tqdm-style progress (no '\n' for a long time) shows up in the log and the
// echo within about a second, and the line's end continues it unprefixed.
TEST(Robustness, AnUnfinishedLineShowsUpWithinASecondAndStaysOneLine) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--",
                             "printf 'progress 50%%'; sleep 8; printf ' 100%%\\n'"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] progress 50%", 6s)) << c.output(head);
  EXPECT_NE(read_file(c.state_dir() + "/logs/rank-0.log").find("progress 50%"), std::string::npos);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  EXPECT_NE(without_log_lines(c.output(head)).find("[rank 0] progress 50% 100%\n"),
            std::string::npos)
      << c.output(head);
  EXPECT_EQ(read_file(c.state_dir() + "/logs/rank-0.log"), "progress 50% 100%\n");
}

// `setsid` leaves the rank's process group and session: only the guard (a
// child subreaper) still finds such a process. Each way a rank can end must
// take its escapees along.
const char* kEscape = "setsid sleep 600 & echo escaped";

TEST(Robustness, SetsidEscapeesEndWithTheJob) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "1", "--local-workers", "1", "--", std::string(kEscape) + "; exit 0"});
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
  EXPECT_NE(c.output(head).find("[rank 0] escaped"), std::string::npos) << c.output(head);
  EXPECT_TRUE(c.no_strays_within()) << "still alive: " << c.live_tagged_processes().size();
}

TEST(Robustness, SetsidEscapeesEndWithAtlctlStop) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "1", "--local-workers", "1", "--", std::string(kEscape) + "; sleep 600"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] escaped")) << c.output(head);
  auto stop = c.atlctl({"--address", c.head_address(), "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.output;
  // Left alive: the head, its local worker. Nothing of the rank.
  int pid_of_head = head.process->pid();
  auto deadline = Clock::now() + 20s;
  auto rank_processes = [&] {
    int n = 0;
    for (int pid : c.live_tagged_processes()) {
      std::string cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
      if (pid != pid_of_head && cmd.find("workernode") == std::string::npos &&
          cmd.find("headnode") == std::string::npos)
        ++n;
    }
    return n;
  };
  while (rank_processes() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rank_processes(), 0);
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1);
  EXPECT_TRUE(c.no_strays_within());
}

TEST(Robustness, SetsidEscapeesEndWithASigkilledWorkernode) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "1", "--max-restarts", "0", "--", std::string(kEscape) + "; sleep 600"});
  auto& worker = c.start_worker(0);
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] escaped")) << c.output(head);
  worker.process->signal(SIGKILL);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
  EXPECT_TRUE(c.no_strays_within()) << "still alive: " << c.live_tagged_processes().size();
}

}  // namespace
}  // namespace atl::test

namespace atl::test {

// A rank whose spawn blocks (its working dir on a hung mount: a test hook
// stalls it the same way) holds up only itself: the spawn ran inside the
// executor, on one of CAF's max(cores, 4) scheduler threads, so that many
// stalled ranks wedged the pod's actor system, heartbeats included, and the
// head declared the pod lost for the wrong reason. Now each spawn runs on
// its process's own thread: the free rank starts at once, the stalled ones
// 10 s later; no restart.
TEST(Robustness, RanksWhoseSpawnStallsHoldUpNothingElse) {
  TestCluster c;
  // As many as CAF 0.17 has scheduler threads: max(cores, 4).
  const int stalled = static_cast<int>(std::max(4u, std::thread::hardware_concurrency()));
  std::string ranks;
  for (int r = 0; r < stalled; ++r) ranks += (r ? "," : "") + std::to_string(r);
  const std::string world = std::to_string(stalled + 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto& head =
      c.start_head({"--workers", "1", "--local-workers", "1", "--nproc-per-node", world, "--env",
                    "ATL_TEST_SPAWN_STALL_MS=10000", "--env", "ATL_TEST_SPAWN_STALL_RANKS=" + ranks,
                    "--", "echo \"start $RANK\"; sleep 1"});
  const std::string free_rank = "[rank " + std::to_string(stalled) + "] start";
  ASSERT_TRUE(c.wait_for_output(head, free_rank, 60s)) << c.output(head);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 9s) << "the free rank waited for the others";
  ASSERT_TRUE(c.wait_for_output(head, "Job status:  succeeded", 90s)) << c.output(head);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(c.output(head).find("stopped answering"), std::string::npos) << c.output(head);
  EXPECT_EQ(c.output(head).find("restarting"), std::string::npos) << c.output(head);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
}

}  // namespace atl::test

namespace atl::test {

// Each of atl's processes checks at start that CAF's libraries call atl's
// replacements (interposition.hpp): in a plain headnode, workernode and
// atlctl every one holds, and the head's status says so.
TEST(Robustness, EveryProcessBindsAtlsReplacements) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--", "sleep 600"});
  ASSERT_TRUE(c.wait_for_output(head, "-> command", 60s)) << c.output(head);
  auto r = c.atlctl({"--address", c.head_address(), "status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto json = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(json.contains("interposition_problems")) << r.output;
  EXPECT_EQ(json["interposition_problems"], nlohmann::json::array()) << r.output;
  EXPECT_EQ(r.output.find("not in use"), std::string::npos) << r.output;
  // The pod's workernode writes to the head's output.
  EXPECT_EQ(c.output(head).find("not in use"), std::string::npos) << c.output(head);
}

}  // namespace atl::test
