// Bad input to every binary: a one-line reason naming what is wrong, exit 2
// (usage), and nothing started.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "test_cluster.hpp"

using namespace atl::test;

namespace {

struct BadUsage {
  std::vector<std::string> args;
  std::string named;
};

CommandResult run(TestCluster& c, const std::string& binary, std::vector<std::string> args) {
  args.insert(args.begin(), bin(binary));
  auto& p = c.start(binary, args);
  return {c.wait_exit(p, 30s), c.output(p)};
}

// A port another job's process listens on (its python3, for the holder's
// name in the refusal); empty if it did not start.
std::string port_of_another_job(TestCluster& c) {
  auto& other = c.start("other",
                        {"/usr/bin/python3", "-c",
                         "import socket, time\n"
                         "s = socket.socket()\n"
                         "s.bind(('127.0.0.1', 0))\n"
                         "s.listen()\n"
                         "print('port', s.getsockname()[1], flush=True)\n"
                         "time.sleep(60)\n"},
                        {"ATL_JOB_ID=jo-other"});
  if (!c.wait_for_output(other, "port ")) return {};
  std::string port = c.output(other).substr(5);
  return port.substr(0, port.find('\n'));
}

}  // namespace

class HeadnodeRejects : public testing::TestWithParam<BadUsage> {};

TEST_P(HeadnodeRejects, WithExitTwoAndTheReason) {
  TestCluster c;
  auto r = run(c, "headnode", GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(GetParam().named), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    BadFlags, HeadnodeRejects,
    testing::Values(
        BadUsage{{"--workers", "abc", "--", "true"}, "--workers"},
        BadUsage{{"--mode", "mpi", "--", "true"}, "--mode"},
        BadUsage{{"--ready-timeout", "5x", "--", "true"}, "--ready-timeout"},
        BadUsage{{"--env", "1BAD=x", "--", "true"}, "--env"},
        BadUsage{{"--workers", "2"}, "entrypoint"},
        BadUsage{{"--workers", "0", "--", "true"}, "workers"},
        BadUsage{{"--job-id", "Bad_Id", "--", "true"}, "job id"},
        BadUsage{{"--port", "70000", "--", "true"}, "--port"},
        BadUsage{{"--history", "-1", "--", "true"}, "--history: '-1' is not a count"},
        BadUsage{{"--history", "10k", "--", "true"}, "--history: '10k'"},
        BadUsage{{"--history", "99999999", "--", "true"}, "--history"},
        BadUsage{{"--job", "/nonexistent.json"}, "/nonexistent.json"},
        // Read without bound (a hang, or bad_alloc) before.
        BadUsage{{"--job", "/dev/zero"}, "--job: /dev/zero: not a regular file"},
        BadUsage{{"--job", "/tmp"}, "--job: /tmp: not a regular file"},
        // Given empty (an unset variable) is no wish for a random id.
        BadUsage{{"--job-id", "", "--", "true"}, "--job-id is empty"},
        // atl sets each rank's RANK: the job's was dropped without a word.
        BadUsage{{"--env", "RANK=5", "--", "true"}, "'env.RANK': atl sets RANK"},
        BadUsage{{"--mode", "driver", "--workers", "0", "--env", "WORLD_SIZE=9", "--", "true"},
                 "'env.WORLD_SIZE'"},
        // Read 16.8 GB before it refused.
        BadUsage{{"--dashboard-token-file", "/dev/zero", "--", "true"},
                 "--dashboard-token-file: /dev/zero: not a regular file"},
        // A bare number is no duration; the id is echoed at most 64 characters.
        BadUsage{{"--grace", "10", "--", "true"}, "--grace: bad duration '10': give a unit"},
        BadUsage{{"--job-id", std::string(1000, 'a'), "--", "true"}, "(1000 given)"},
        BadUsage{{"--bogus", "--", "true"}, "bogus"},
        BadUsage{{"--workers", "1", "--local-workers", "3", "--", "true"}, "--local-workers"},
        BadUsage{{"--workers", "1", "--spare-workers", "1", "--local-workers", "3", "--", "true"},
                 "--local-workers"},
        BadUsage{{"--spare-workers", "-1", "--", "true"}, "spare_workers"},
        BadUsage{{"--max-restarts", "-1", "--", "true"}, "max_restarts"},
        BadUsage{{"--max-restarts", "x", "--", "true"}, "max-restarts"},
        BadUsage{{"--heartbeat-timeout", "100ms", "--", "true"}, "at least twice the interval"},
        BadUsage{{"--heartbeat-interval", "0s", "--", "true"}, "interval"},
        BadUsage{{"--heartbeat-timeout", "soon", "--", "true"}, "--heartbeat-timeout"},
        BadUsage{{"--pod-restart-delay", "later", "--", "true"}, "--pod-restart-delay"},
        BadUsage{{"--mode", "ray", "--ray-bin", "/nonexistent/ray", "--", "true"}, "--ray-bin"},
        BadUsage{{"--mode", "ray", "--ray-port", "0", "--", "true"}, "--ray-port"},
        BadUsage{{"--mode", "ray", "--ray-dashboard-port", "70000", "--", "true"},
                 "--ray-dashboard-port"}));

// A FIFO as the job file or the token file: refused at once, never waited on.
TEST(HeadnodeRejects, AFifoForAFileAtOnce) {
  TestCluster c;
  const std::string fifo = c.dir() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--job", fifo}, {"--dashboard-token-file", fifo, "--", "true"}}) {
    auto r = run(c, "headnode", args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(fifo + ": not a regular file"), std::string::npos) << r.output;
  }
}

// A port another job holds is refused naming that job (its process's
// ATL_JOB_ID), not in CAF's words ("cannot_open_port, (\"tcp socket
// creation failed\", ...)").
TEST(HeadnodeRejects, APortTakenNamingWhoHoldsIt) {
  TestCluster c;
  const std::string port = port_of_another_job(c);
  ASSERT_FALSE(port.empty());
  auto r = run(c, "headnode", {"--workers", "1", "--port", port, "--", "true"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("headnode: cannot listen on 127.0.0.1:" + port +
                          ": taken by job jo-other's python3 (pid "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("cannot_open_port"), std::string::npos) << r.output;
}

// The dashboard listens before the job begins: a port given and taken is
// refused before any rank runs (not after the local pods passed their gate).
TEST(HeadnodeRejects, ADashboardPortTakenIsRefusedBeforeAnyRankRuns) {
  TestCluster c;
  const std::string port = port_of_another_job(c);
  ASSERT_FALSE(port.empty());
  const std::string ran = c.dir() + "/ran";
  auto r = run(c, "headnode",
               {"--workers", "1", "--local-workers", "1", "--state-dir", c.dir() + "/state",
                "--dashboard-port", port, "--", "touch " + ran});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("headnode: --dashboard-port: cannot listen on 127.0.0.1:" + port +
                          ": taken by job jo-other's python3 (pid "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("listening on"), std::string::npos) << r.output;
  EXPECT_FALSE(std::ifstream(ran).good()) << "a rank ran: " << r.output;
}

// A token file others can read (a secret mounted 0644) is taken, with a
// word saying how to close it; a 0600 one without.
TEST(Headnode, WarnsOfATokenFileOthersCanRead) {
  TestCluster c;
  const std::string token = c.dir() + "/token";
  std::ofstream(token) << "0123456789abcdefghij\n";
  for (mode_t mode : {0644, 0600}) {
    ASSERT_EQ(::chmod(token.c_str(), mode), 0);
    auto& head = c.start_head(
        {"--mode", "driver", "--workers", "0", "--dashboard-token-file", token, "--", "true"});
    EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
    const bool warned =
        c.output(head).find("--dashboard-token-file " + token +
                            " can be read by others than its owner: chmod 600 it") !=
        std::string::npos;
    EXPECT_EQ(warned, mode == 0644) << c.output(head);
  }
}

// --version: one line naming the program and atl's version, exit 0, and
// nothing started (no state dir, no connection).
TEST(EveryProgram, SaysItsVersion) {
  TestCluster c;
  for (const char* program : {"headnode", "workernode", "atlctl"}) {
    auto r = run(c, program, {"--version"});
    EXPECT_EQ(r.exit_code, 0) << program << ": " << r.output;
    EXPECT_EQ(r.output, std::string(program) + " (atl " + ATL_VERSION + ")\n") << r.output;
  }
}

// `source <(atlctl completion bash)` completes commands, then the chosen
// command's options, in a real bash.
TEST(AtlctlCompletion, BashCompletesCommandsAndEachCommandsOptions) {
  TestCluster c;
  auto complete = [&](const std::string& words, int cword) {
    const std::string script = "source <(" + bin("atlctl") + " completion bash) && COMP_WORDS=(" +
                               words + ") && COMP_CWORD=" + std::to_string(cword) +
                               " && _atlctl && echo \"${COMPREPLY[*]}\"";
    auto& p = c.start("bash", {"/bin/bash", "-c", script});
    EXPECT_EQ(c.wait_exit(p, 30s), 0) << c.output(p);
    return c.output(p);
  };
  EXPECT_EQ(complete("atlctl lo", 1), "logs\n");
  EXPECT_EQ(complete("atlctl --address h:1 st", 3), "status stop\n");
  EXPECT_EQ(complete("atlctl logs --ti", 2), "--timestamps\n");
  EXPECT_EQ(complete("atlctl logs -r 1 --a", 4), "--attempt\n");
  EXPECT_EQ(complete("atlctl burn --burn", 2), "--burnType\n") << "the guide's long names too";
  EXPECT_EQ(complete("atlctl completion ''", 2), "bash zsh\n");
  // An option's values after it, from the types themselves.
  EXPECT_EQ(complete("atlctl burn -t ''", 3), "gemm transfer local global batch\n");
  EXPECT_EQ(complete("atlctl burn -d 5m --burnType g", 5), "gemm global\n");
  EXPECT_EQ(complete("atlctl check --type a", 3), "allreduce all\n");
  EXPECT_EQ(complete("atlctl taint -a ''", 3), "list set remove\n");
  EXPECT_EQ(complete("atlctl status -o ''", 3), "json wide\n");
  EXPECT_EQ(complete("atlctl burn -d ''", 3).find("gemm"), std::string::npos)
      << "a duration is no type";
  auto refused = run(c, "atlctl", {"completion", "fish"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("completion: say which shell: atlctl completion bash (or zsh)"),
            std::string::npos)
      << refused.output;
}

// `source <(atlctl completion zsh)` in a real zsh: its bashcompinit takes
// the script, registers atlctl, and the function offers commands and an
// option's values (zsh itself narrows them to what is typed).
TEST(AtlctlCompletion, ZshTakesTheScriptAndOffersTheSameWords) {
  if (::access("/usr/bin/zsh", X_OK) != 0)
    GTEST_SKIP() << "no zsh here (setup.sh --tests installs it)";
  TestCluster c;
  const std::string script = "source <(" + bin("atlctl") +
                             " completion zsh) || exit 3; print -- ${_comps[atlctl]}; "
                             "setopt ksharrays; COMP_WORDS=(atlctl burn --burnType ''); "
                             "COMP_CWORD=3; _atlctl; print -- \"${COMPREPLY[*]}\"; "
                             "COMP_WORDS=(atlctl ''); COMP_CWORD=1; _atlctl; "
                             "print -- \"${COMPREPLY[*]}\"";
  auto& p = c.start("zsh", {"/usr/bin/zsh", "-f", "-c", script},
                    {"HOME=" + c.dir(), "PATH=/usr/bin:/bin"});
  ASSERT_EQ(c.wait_exit(p, 30s), 0) << c.output(p);
  const std::string out = c.output(p);
  EXPECT_NE(out.find("_bash_complete -o default -F _atlctl"), std::string::npos) << out;
  EXPECT_NE(out.find("gemm transfer local global batch\n"), std::string::npos) << out;
  EXPECT_NE(out.find("burn check dashboard-url"), std::string::npos) << out;
}

TEST(HeadnodeRejects, ABadJobFileNamingTheField) {
  TestCluster c;
  std::string path = c.dir() + "/job.json";
  std::ofstream(path) << R"({"entrypoint": "true", "nproc_per_node": "four"})";
  auto r = run(c, "headnode", {"--job", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("'nproc_per_node'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
}

TEST(WorkernodeRejects, BadFlags) {
  TestCluster c;
  for (auto args : std::vector<std::vector<std::string>>{
           {"--name", "w"},
           {"--head", "127.0.0.1:1"},
           {"--head", "nohost", "--name", "w"},
           {"--head", "127.0.0.1:1", "--name", "w", "--memory", "lots"},
           {"--head", "127.0.0.1:1", "--name", "w", "--node", ""},
           {"--head", "127.0.0.1:1", "--name", "w", "--node", "a,b"},
           {"--head", "127.0.0.1:1", "--name", "w", "--node", "all"}}) {
    auto r = run(c, "workernode", args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
}

TEST(WorkernodeRejects, AnUnreachableHeadWithExitThree) {
  TestCluster c;
  c.make_credentials();
  // Port 1 on loopback: nothing listens there.
  auto r =
      run(c, "workernode", {"--head", "127.0.0.1:1", "--name", "w", "--connect-timeout", "1s"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("cannot reach the head at 127.0.0.1:1"), std::string::npos) << r.output;
}

// It kept trying for the whole --connect-timeout and ignored SIGTERM.
TEST(WorkernodeRejects, SigtermWhileConnectingEndsItAtOnce) {
  TestCluster c;
  c.make_credentials();
  auto& p = c.start("workernode", {bin("workernode"), "--head", "127.0.0.1:1", "--name", "w",
                                   "--connect-timeout", "120s"});
  // Trying: nothing listens at port 1, so it backs off and tries again.
  std::this_thread::sleep_for(1s);  // lets it reach its connect loop; not a wait for an event
  auto sent = std::chrono::steady_clock::now();
  p.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(p, 30s), 143) << c.output(p);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 15s) << c.output(p);
}

// An atlctl waiting for an answer when the head dies ends at once, saying so
// (it waited its whole timeout and then blamed the TLS certificates).
TEST(AtlctlRejects, AHeadThatDiesMidRequestEndsItAtOnceSayingSo) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--grace", "60s", "--",
                             "trap '' TERM; echo up; sleep 300"});
  ASSERT_TRUE(c.wait_for_output(head, "[rank 0] up")) << c.output(head);
  // stop waits for the rank, which ignores SIGTERM: for the 60 s grace.
  auto& stop = c.start("atlctl", {bin("atlctl"), "--address", c.head_address(), "stop"});
  ASSERT_TRUE(c.wait_for_output(stop, "Stopping task in all workers...")) << c.output(stop);
  auto killed = std::chrono::steady_clock::now();
  head.process->signal(SIGKILL);
  EXPECT_EQ(c.wait_exit(stop, 60s), 4) << c.output(stop);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s) << c.output(stop);
  EXPECT_NE(c.output(stop).find("lost the supervisor at " + c.head_address()), std::string::npos)
      << c.output(stop);
  EXPECT_EQ(c.output(stop).find("certificate"), std::string::npos) << c.output(stop);
}

// CAF 0.17 dropped a connect whose handshake was still awaited at its first
// heartbeat tick (~1 s after atlctl started): a head busy for a second (CI:
// accepting 1,500 connections) turned `atlctl status` into
// "system_error(connection_timeout)". A head that answers late is waited
// for; one that never answers ends atlctl with a line saying so.
TEST(AtlctlReaches, AHeadThatFinishesItsHandshakeLate) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--ready-timeout", "10m", "--", "true"});
  ASSERT_TRUE(c.wait_for_status("pending"));
  head.process->signal(SIGSTOP);  // the kernel still completes TCP connects
  // Over TCP (the local door would wait for the head on its own).
  const std::vector<std::string> tcp = {"ATL_LOCAL_DOOR=off"};
  auto& late = c.start("atlctl", {bin("atlctl"), "--address", c.head_address(), "status"}, tcp);
  // Stopped for longer than a heartbeat interval: the stall is the point
  // here, not a wait for an event.
  std::this_thread::sleep_for(2500ms);
  head.process->signal(SIGCONT);
  EXPECT_EQ(c.wait_exit(late, 60s), 0) << c.output(late);
  EXPECT_EQ(c.output(late), "Job status:  pending\n");

  head.process->signal(SIGSTOP);
  auto& never = c.start("atlctl", {bin("atlctl"), "--address", c.head_address(), "status"}, tcp);
  EXPECT_EQ(c.wait_exit(never, 60s), 4) << c.output(never);
  head.process->signal(SIGCONT);
  EXPECT_EQ(c.output(never), "atlctl: cannot reach the supervisor at " + c.head_address() +
                                 ": it took the connection but did not finish the handshake "
                                 "in time (busy or frozen)\n");
  EXPECT_TRUE(c.wait_for_status("pending"));
  head.process->signal(SIGTERM);
  c.wait_exit(head);
}

TEST(WorkernodeRejects, AnUnknownPodIsRefusedByTheHead) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--ready-timeout", "60s", "--", "true"});
  auto r = run(c, "workernode", {"--head", c.head_address(), "--name", "intruder"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown pod 'intruder'"), std::string::npos) << r.output;
  // The job is untouched: still pending, and a right worker completes it.
  EXPECT_TRUE(c.wait_for_status("pending"));
  c.start_worker(0);
  EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
}

TEST(AtlctlRejects, BadUsage) {
  TestCluster c;
  c.make_credentials();
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string named;
  };
  for (const auto& k : std::vector<Case>{
           {{"status"}, 2, "ATL_ADDRESS"},
           {{"--address", "nohost", "status"}, 2, "nohost"},
           {{"--address", "127.0.0.1:1", "frobnicate"}, 2, "frobnicate"},
           {{"--address", "127.0.0.1:1", "status", "--bogus"}, 2, "bogus"},
           {{"--address", "127.0.0.1:1", "status"}, 4, "127.0.0.1:1"},
           {{"--address", "127.0.0.1:1", "logs", "--tail", "x"}, 2, "tail"},
           // Extra words were silently dropped: only POD0 was deleted.
           {{"--address", "127.0.0.1:1", "delete", "-p", "POD0", "POD1"},
            2,
            "delete: unexpected word 'POD1'"},
           {{"--address", "127.0.0.1:1", "taint", "-a", "set", "-n", "n0", "n1"},
            2,
            "taint: unexpected word 'n1'"},
           {{"--address", "127.0.0.1:1", "status", "extra"}, 2, "status: unexpected word 'extra'"},
       }) {
    std::vector<std::string> argv = {"env", "-u", "ATL_ADDRESS", bin("atlctl")};
    argv.insert(argv.end(), k.args.begin(), k.args.end());
    auto& p = c.start("atlctl", argv);
    int code = c.wait_exit(p, 30s);
    std::string out = c.output(p);
    EXPECT_EQ(code, k.code) << out;
    EXPECT_EQ(count_lines(out), 1) << out;
    EXPECT_NE(out.find(k.named), std::string::npos) << out;
  }
  auto help = c.atlctl({"status", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("Job status:"), std::string::npos);
}

// Credentials that do not load (a garbled ca.pem, a folder that is not
// there) are refused by each program before it listens or connects: exit 2
// and one line naming the file. workernode and atlctl read them on a thread
// of their own while their actor system starts; the refusal is the same,
// and a workernode's comes before any try to reach the head (exit 3).
TEST(TlsDirRejects, EachProgramNamesTheFileThatDoesNotLoad) {
  TestCluster c;
  const std::string garbled = c.state_dir() + "-garbled-tls";
  const std::string missing = c.state_dir() + "-no-such-tls";
  ASSERT_EQ(std::system(("mkdir -p " + garbled).c_str()), 0);
  std::ofstream(garbled + "/ca.pem") << "not a certificate\n";
  struct Case {
    std::string dir, named;
  };
  for (const auto& k : std::vector<Case>{{garbled, garbled + "/ca.pem: not a PEM certificate"},
                                         {missing, "cannot read " + missing + "/ca.pem"}}) {
    auto head = run(c, "headnode",
                    {"--state-dir", c.state_dir(), "--tls-dir", k.dir, "--port", "0",
                     "--dashboard-port", "off", "--workers", "1", "--", "true"});
    EXPECT_EQ(head.exit_code, 2) << head.output;
    EXPECT_EQ(count_lines(head.output), 1) << head.output;
    EXPECT_NE(head.output.find("headnode: --tls-dir: " + k.named), std::string::npos)
        << head.output;
    EXPECT_EQ(head.output.find("listening on"), std::string::npos) << head.output;
    auto worker = run(
        c, "workernode",
        {"--head", "127.0.0.1:1", "--name", "w", "--tls-dir", k.dir, "--connect-timeout", "1s"});
    EXPECT_EQ(worker.exit_code, 2) << worker.output;
    EXPECT_EQ(count_lines(worker.output), 1) << worker.output;
    EXPECT_NE(worker.output.find("workernode: --tls-dir: " + k.named), std::string::npos)
        << worker.output;
    auto ctl = run(c, "atlctl", {"--address", "127.0.0.1:1", "--tls-dir", k.dir, "status"});
    EXPECT_EQ(ctl.exit_code, 2) << ctl.output;
    EXPECT_EQ(count_lines(ctl.output), 1) << ctl.output;
    EXPECT_NE(ctl.output.find("atlctl: " + k.named), std::string::npos) << ctl.output;
  }
}
