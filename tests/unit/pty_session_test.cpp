// A real shell on a real pseudo-terminal: what the web terminal runs.
#include "atl/os/pty_session.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace atl::os {
namespace {

PtyOptions sh(int rows = 24, int cols = 80) {
  PtyOptions o;
  o.argv = {"/bin/sh"};
  o.env = {"PATH=/usr/bin:/bin", "TERM=xterm", "PS1=$ ", "ATL_POD=job-worker-3"};
  o.rows = rows;
  o.cols = cols;
  return o;
}

// Reads until `want` shows up (the terminal echoes what is typed: a marker
// the shell computes, "done-$((1+1))" printing "done-2", is not in the echo) (generous: 20 s on a
// loaded machine).
std::string read_until(PtySession& p, const std::string& want) {
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen.find(want) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    auto got = p.read(4096, 200);
    if (!got) break;
    seen += *got;
  }
  return seen;
}

TEST(PtySession, RunsAShellWithItsEnvironmentAndTerminalSize) {
  auto p = PtySession::start(sh(33, 101));
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE((*p)->write("echo pod=$ATL_POD; stty size; tty -s && echo has-a-$((1+1))tty\n").ok());
  auto out = read_until(**p, "has-a-2tty");
  EXPECT_NE(out.find("pod=job-worker-3"), std::string::npos) << out;
  EXPECT_NE(out.find("33 101"), std::string::npos) << out;
  EXPECT_NE(out.find("pod=job-worker-3\r\n"), std::string::npos) << out;
  ASSERT_TRUE((*p)->resize(40, 120).ok());
  ASSERT_TRUE((*p)->write("stty size; echo size-$((1+1))\n").ok());
  out = read_until(**p, "size-2");
  EXPECT_NE(out.find("40 120"), std::string::npos) << out;
}

TEST(PtySession, TheShellHoldsNoDescriptorOfTheNodeButItsTerminal) {
  // A pipe the node holds open, as workernode's output pipe to its parent:
  // the shell (and what it starts) must not keep it, or the reader of the
  // other end waits for a background job started in a terminal. Compared by
  // what each descriptor is, not by its number: the shell keeps descriptors
  // of its own (dash its terminal at 10), and the pipe's numbers depend on
  // what the test's parent left open (CI's runner leaves some).
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(pipe_fds[0], &st), 0);
  const std::string the_pipe = "pipe:[" + std::to_string(st.st_ino) + "]";
  auto p = PtySession::start(sh());
  ASSERT_TRUE(p.ok()) << p.error();
  // Once the shell answers, it runs (exec'd) with what it will keep.
  ASSERT_TRUE((*p)->write("echo up-$((1+1))\n").ok());
  auto out = read_until(**p, "up-2");
  ASSERT_NE(out.find("up-2"), std::string::npos) << out;
  std::vector<std::string> held;
  const std::string dir = "/proc/" + std::to_string((*p)->pid()) + "/fd";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec) held.push_back(e.path().filename().string() + " -> " + target.string());
  }
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  std::string all;
  for (const auto& h : held) all += h + "\n";
  // Its terminal, as 0, 1 and 2; never the node's pipe.
  EXPECT_NE(all.find("0 -> /dev/pts/"), std::string::npos) << all;
  EXPECT_EQ(all.find(the_pipe), std::string::npos) << all;
}

TEST(PtySession, TheShellsExitEndsReadsWithItsStatus) {
  auto p = PtySession::start(sh());
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE((*p)->write("exit 7\n").ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool ended = false;
  while (!ended && std::chrono::steady_clock::now() < deadline) ended = !(*p)->read(4096, 200);
  ASSERT_TRUE(ended);
  auto st = (*p)->wait();
  EXPECT_EQ(st.code, 7);
  EXPECT_EQ(st.signal, 0);
}

TEST(PtySession, HangingUpEndsTheShellAndWhatItStarted) {
  auto p = PtySession::start(sh());
  ASSERT_TRUE(p.ok()) << p.error();
  // A job that ignores nothing: the hang-up reaches the whole session.
  ASSERT_TRUE((*p)->write("sleep 300 & echo started-$((1+1))-$! end-$((2+2))\n").ok());
  auto out = read_until(**p, " end-4");
  auto at = out.find("started-2-");
  ASSERT_NE(at, std::string::npos) << out;
  const pid_t sleeper = std::atoi(out.c_str() + at + 10);
  ASSERT_GT(sleeper, 0);
  auto st = (*p)->hang_up(2000);
  EXPECT_TRUE(st.signal == SIGHUP || st.signal == SIGKILL || st.code != 0) << st.describe();
  // The background job is gone too (SIGHUP from the session's end, or ours).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::kill(sleeper, 0) == 0 && std::chrono::steady_clock::now() < deadline)
    (void)(*p)->read(64, 50);
  EXPECT_NE(::kill(sleeper, 0), 0) << "sleep " << sleeper << " outlived its terminal";
}

TEST(PtySession, WakeEndsAWaitingReadWithNothing) {
  auto p = PtySession::start(sh());
  ASSERT_TRUE(p.ok()) << p.error();
  read_until(**p, "$ ");
  (*p)->wake();
  auto got = (*p)->read(4096, -1);  // would wait forever without the wake
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
}

TEST(PtySession, RefusesWhatCannotBeATerminal) {
  auto o = sh(0, 80);
  auto p = PtySession::start(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(), "a terminal of 80x0 is not between 1x1 and 1000x1000");
  EXPECT_FALSE(PtySession::start(sh(24, 5000)).ok());
  PtyOptions none;
  EXPECT_EQ(PtySession::start(none).error(), "a terminal needs a program to run");
  auto ok = PtySession::start(sh());
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE((*ok)->resize(-1, 10).ok());
}

TEST(PtySession, TheShellIsTheUsersElseBashElseSh) {
  PtyOptions o;
  use_shell(o, "/bin/sh");
  EXPECT_EQ(o.program, "/bin/sh");
  ASSERT_EQ(o.argv.size(), 1u);
  EXPECT_EQ(o.argv[0], "sh");  // not "-sh": a login shell would reset PATH
  use_shell(o, "/no/such/shell");
  EXPECT_TRUE(o.program == "/bin/bash" || o.program == "/usr/bin/bash" || o.program == "/bin/sh");
  use_shell(o, "relative/sh");  // never a path relative to wherever
  EXPECT_EQ(o.program[0], '/');
  use_shell(o, nullptr);
  EXPECT_EQ(o.argv[0], o.program.substr(o.program.rfind('/') + 1));
}

}  // namespace
}  // namespace atl::os
