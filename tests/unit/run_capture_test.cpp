// Helper commands run bounded in time and size, and a real rank's stack
// taken the way the hang watch's diagnosis takes it.
#include "atl/os/run_capture.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "atl/core/stacks.hpp"
#include "atl/os/process_sample.hpp"

namespace atl::os {
namespace {

using namespace std::chrono_literals;

TEST(RunCapture, ReturnsWhatItPrintedAndHowItEnded) {
  auto r = run_capture({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->output, "out\nerr\n");
  ASSERT_TRUE(r->status);
  EXPECT_EQ(r->status->code, 3);
  EXPECT_FALSE(r->timed_out);
}

TEST(RunCapture, AHelperPastItsDeadlineIsKilledWithWhatItSaidSoFar) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_capture({"sh", "-c", "echo partial; sleep 30"}, 300ms);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->status);
  EXPECT_EQ(r->output, "partial\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(RunCapture, OutputPastTheLimitIsCut) {
  auto r = run_capture({"sh", "-c", "head -c 100000 /dev/zero"}, 10s, 1000);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->output.size(), 1000u);
  EXPECT_TRUE(r->truncated);
}

TEST(RunCapture, AMissingCommandIsNamed) {
  auto r = run_capture({"no-such-helper-atl"}, 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "no-such-helper-atl: not found on PATH");
  EXPECT_EQ(find_program("no-such-helper-atl"), "");
  EXPECT_NE(find_program("sh"), "");
}

TEST(CaptureStack, APythonRanksStackIsTakenFromItsTree) {
  if (find_program("py-spy").empty() && find_program("gdb").empty())
    GTEST_SKIP() << "neither py-spy nor gdb here";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A shell wrapper around the Python rank, as entrypoints often are.
    ::execl("/bin/sh", "sh", "-c",
            "/usr/bin/python3 -c 'import time\ndef train_step():\n    time.sleep(60)\n"
            "train_step()'; :",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_t target = 0;
  ProcessTable table;
  for (int i = 0; i < 500 && target == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    table = read_process_table();
    pid_t t = stack_target(table, pid);
    if (t != 0 && table.at(t).comm.rfind("python", 0) == 0) target = t;
  }
  ASSERT_NE(target, 0);
  EXPECT_NE(target, pid);              // the Python process below the shell
  std::this_thread::sleep_for(300ms);  // into its sleep
  auto stack = capture_stack(read_process_table(), pid, 20s);
  EXPECT_EQ(stack.target, target);
  EXPECT_EQ(stack.error, "") << stack.text;
  if (stack.tool == "py-spy") {
    EXPECT_EQ(stack_top(parse_py_spy(stack.text)), "train_step (<string>)") << stack.text;
  } else {
    ASSERT_EQ(stack.tool, "gdb");
    EXPECT_FALSE(stack_signature(parse_gdb(stack.text)).empty()) << stack.text;
  }
  ::kill(target, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace atl::os
