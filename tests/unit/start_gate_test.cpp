// The local pods' start gate (start_gate.hpp) on real socket pairs.
#include "atl/os/start_gate.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using atl::os::GateOutcome;
using atl::os::StartGate;
using atl::os::wait_at_start_gate;

namespace {

StartGate make_gate(std::size_t pods = 1) {
  auto gate = StartGate::make(pods);
  EXPECT_TRUE(gate.ok()) << gate.error();
  return std::move(gate).value();
}

// Pod i's end, as the pod has it after its spawn (the gate's own is closed
// with close_pod_ends).
int pod_copy(const StartGate& gate, std::size_t i = 0) {
  return ::fcntl(gate.pod_end(i), F_DUPFD_CLOEXEC, 3);
}

}  // namespace

TEST(StartGate, OpeningLetsEveryPodThrough) {
  auto gate = make_gate(2);
  int a = pod_copy(gate, 0), b = pod_copy(gate, 1);
  gate.close_pod_ends();
  gate.open();
  EXPECT_EQ(wait_at_start_gate(a, 5s), GateOutcome::open);
  EXPECT_EQ(wait_at_start_gate(b, 5s), GateOutcome::open);
  ::close(a);
  ::close(b);
}

TEST(StartGate, APodWaitingGoesOnWhenTheGateOpens) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  auto waited = std::async(std::launch::async, [a] { return wait_at_start_gate(a, 30s); });
  gate.open();
  EXPECT_EQ(waited.get(), GateOutcome::open);
  ::close(a);
}

TEST(StartGate, AGateClosedUnopenedMeansTheHeadIsGone) {
  int a = -1;
  {
    auto gate = make_gate();
    a = pod_copy(gate);
  }
  EXPECT_EQ(wait_at_start_gate(a, 5s), GateOutcome::head_gone);
}

TEST(StartGate, AHeadThatDiesWhileAPodWaitsIsGone) {
  auto gate = std::make_unique<StartGate>(make_gate());
  int a = pod_copy(*gate);
  auto waited = std::async(std::launch::async, [a] { return wait_at_start_gate(a, 30s); });
  gate.reset();
  EXPECT_EQ(waited.get(), GateOutcome::head_gone);
}

TEST(StartGate, AGateNeverOpenedTimesOut) {
  auto gate = make_gate();
  EXPECT_EQ(wait_at_start_gate(pod_copy(gate), 30ms), GateOutcome::timed_out);
  EXPECT_EQ(wait_at_start_gate(pod_copy(gate), 0ms), GateOutcome::timed_out);
}

TEST(StartGate, OpeningTwiceOrAfterClosingThePodsEndsChangesNothing) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  gate.close_pod_ends();
  gate.close_pod_ends();
  EXPECT_EQ(gate.pod_end(0), -1);
  EXPECT_EQ(gate.pod_end(7), -1);
  gate.open();
  gate.open();  // one byte, not two: the second would be read as the line's
  EXPECT_EQ(wait_at_start_gate(a, 5s), GateOutcome::open);
  int queued = -1;
  ASSERT_EQ(::ioctl(a, FIONREAD, &queued), 0);
  EXPECT_EQ(queued, 0);
  ::close(a);
}

TEST(StartGate, AGateThatTimesOutOrFindsTheHeadGoneClosesThePodsEnd) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  wait_at_start_gate(a, 0ms);
  EXPECT_EQ(::fcntl(a, F_GETFD), -1);
}

// Past the byte, the gate is the pod's line to its head (pod_line.hpp): what
// the head sends after opening reaches the pod, and the other way round, on
// each pod's own socket.
TEST(StartGate, PastTheByteEachPodsGateIsItsOwnLineToTheHead) {
  auto gate = make_gate(2);
  int a = pod_copy(gate, 0), b = pod_copy(gate, 1);
  gate.close_pod_ends();
  EXPECT_TRUE(gate.take_lines().empty());  // not before the gate opened
  gate.open();
  std::vector<int> lines = gate.take_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(gate.take_lines().empty());  // once
  ASSERT_EQ(::write(lines[0], "to-a", 4), 4);
  ASSERT_EQ(::write(lines[1], "to-b", 4), 4);
  ASSERT_EQ(wait_at_start_gate(a, 5s), GateOutcome::open);
  ASSERT_EQ(wait_at_start_gate(b, 5s), GateOutcome::open);
  char got[8] = {};
  ASSERT_EQ(::read(a, got, sizeof got), 4);
  EXPECT_EQ(std::string(got, 4), "to-a");
  ASSERT_EQ(::read(b, got, sizeof got), 4);
  EXPECT_EQ(std::string(got, 4), "to-b");
  ASSERT_EQ(::write(b, "from-b", 6), 6);
  ASSERT_EQ(::read(lines[1], got, sizeof got), 6);
  EXPECT_EQ(std::string(got, 6), "from-b");
  for (int fd : {a, b, lines[0], lines[1]}) ::close(fd);
}

// A pod gone before the gate opened (its end closed): opening is still
// quiet (no SIGPIPE), and its line is -1.
TEST(StartGate, APodGoneBeforeTheGateOpenedHasNoLine) {
  auto gate = make_gate(2);
  int b = pod_copy(gate, 1);
  gate.close_pod_ends();  // pod 0 never kept its end
  gate.open();
  auto lines = gate.take_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], -1);
  EXPECT_GE(lines[1], 0);
  EXPECT_EQ(wait_at_start_gate(b, 5s), GateOutcome::open);
  ::close(b);
  ::close(lines[1]);
}

TEST(StartGateFd, OnlyAWholeNumberAboveStdioIsAGate) {
  EXPECT_EQ(atl::os::parse_start_gate_fd("3"), 3);
  EXPECT_EQ(atl::os::parse_start_gate_fd("17"), 17);
  for (const char* bad : {"", "0", "1", "2", "-3", "3x", " 3", "3 ", "0x3", "99999999999"})
    EXPECT_EQ(atl::os::parse_start_gate_fd(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(atl::os::parse_start_gate_fd(nullptr), std::nullopt);
}

TEST(StartGateFd, TakingItRemovesTheVariableAndKeepsItFromChildren) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  ::fcntl(a, F_SETFD, 0);  // as a pod finds it after exec
  ::setenv(atl::os::kStartGateEnv, std::to_string(a).c_str(), 1);
  EXPECT_EQ(atl::os::take_start_gate(), a);
  EXPECT_EQ(std::getenv(atl::os::kStartGateEnv), nullptr);
  EXPECT_EQ(::fcntl(a, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(atl::os::take_start_gate(), std::nullopt);  // taken once
  ::close(a);
}

TEST(StartGateFd, ANumberThatIsNotOpenOrNotANumberIsNoGate) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  ::close(fds[1]);
  for (std::string text : {std::to_string(fds[0]), std::string("three")}) {
    ::setenv(atl::os::kStartGateEnv, text.c_str(), 1);
    EXPECT_EQ(atl::os::take_start_gate(), std::nullopt) << text;
    EXPECT_EQ(std::getenv(atl::os::kStartGateEnv), nullptr);
  }
}
