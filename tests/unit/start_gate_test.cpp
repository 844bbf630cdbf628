// The local pods' start gate (start_gate.hpp) on real pipes.
#include "atl/os/start_gate.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <future>

using namespace std::chrono_literals;
using atl::os::GateOutcome;
using atl::os::StartGate;
using atl::os::wait_at_start_gate;

namespace {

StartGate make_gate() {
  auto gate = StartGate::make();
  EXPECT_TRUE(gate.ok()) << gate.error();
  return std::move(gate).value();
}

// A pod's copy of the gate (each pod has one after its spawn).
int pod_copy(const StartGate& gate) { return ::fcntl(gate.pod_end(), F_DUPFD_CLOEXEC, 3); }

}  // namespace

TEST(StartGate, OpeningLetsEveryPodThrough) {
  auto gate = make_gate();
  int a = pod_copy(gate), b = pod_copy(gate);
  gate.close_pod_end();
  gate.open();
  EXPECT_EQ(wait_at_start_gate(a, 5s), GateOutcome::open);
  EXPECT_EQ(wait_at_start_gate(b, 5s), GateOutcome::open);  // the byte was left for it
}

TEST(StartGate, APodWaitingGoesOnWhenTheGateOpens) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  auto waited = std::async(std::launch::async, [a] { return wait_at_start_gate(a, 30s); });
  gate.open();
  EXPECT_EQ(waited.get(), GateOutcome::open);
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

TEST(StartGate, OpeningTwiceOrAfterClosingThePodsEndChangesNothing) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  gate.close_pod_end();
  gate.close_pod_end();
  EXPECT_EQ(gate.pod_end(), -1);
  gate.open();
  gate.open();
  EXPECT_EQ(wait_at_start_gate(a, 5s), GateOutcome::open);
}

TEST(StartGate, TheWaitClosesThePodsCopy) {
  auto gate = make_gate();
  int a = pod_copy(gate);
  gate.open();
  wait_at_start_gate(a, 5s);
  EXPECT_EQ(::fcntl(a, F_GETFD), -1);
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
