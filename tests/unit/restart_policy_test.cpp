#include "atl/core/restart_policy.hpp"

#include <gtest/gtest.h>

using atl::Fault;
using atl::FaultKind;
using atl::FaultResponse;
using atl::RestartPolicy;
using S = atl::JobState;

namespace {

Fault lost(const std::string& pod) {
  return {FaultKind::pod_lost, pod, "pod " + pod + " was lost"};
}

const FaultKind kAllKinds[] = {
    FaultKind::pod_lost,       FaultKind::pod_hung,         FaultKind::pod_deleted,
    FaultKind::gpu_lost,       FaultKind::preflight_failed, FaultKind::rank_failed,
    FaultKind::head_restarted, FaultKind::ready_timeout,    FaultKind::job_hung};

}  // namespace

TEST(RestartPolicy, AFaultInCommandRestartsUntilTheBudgetIsSpent) {
  RestartPolicy p({2, false});
  EXPECT_EQ(p.respond(S::command, lost("w0")), FaultResponse::restart);
  EXPECT_EQ(p.used(), 1);
  EXPECT_EQ(p.respond(S::command, lost("w1")), FaultResponse::restart);
  EXPECT_EQ(p.used(), 2);
  EXPECT_TRUE(p.spent());
  EXPECT_EQ(p.respond(S::command, lost("w0")), FaultResponse::fail);
  EXPECT_EQ(p.used(), 2);
  auto lines = p.attempt_lines();
  ASSERT_EQ(lines.size(), 3u) << "the fault that found the budget spent is listed too";
  EXPECT_EQ(lines[0], "attempt 1: pod w0 was lost");
  EXPECT_EQ(lines[1], "attempt 2: pod w1 was lost");
  EXPECT_EQ(lines[2], "attempt 3: pod w0 was lost");
}

// After a recover (attempt 2 began without a fault) the next fault ends
// attempt 2: status -v numbered it by restart ("attempt 1"), one off from
// logs/attempt-K.
TEST(RestartPolicy, AttemptLinesAreNumberedByTheAttemptTheFaultEnded) {
  RestartPolicy p({5, false});
  Fault second = lost("w0");
  second.attempt = 2;
  Fault fourth = lost("w1");
  fourth.attempt = 4;
  p.respond(S::command, second);
  p.respond(S::command, fourth);
  EXPECT_EQ(p.attempt_lines(),
            (std::vector<std::string>{"attempt 2: pod w0 was lost", "attempt 4: pod w1 was lost"}));
}

TEST(RestartPolicy, ZeroRestartsNeverRestarts) {
  for (FaultKind kind : kAllKinds) {
    RestartPolicy fresh({0, true});
    EXPECT_EQ(fresh.respond(S::command, {kind, "w0", "x"}), FaultResponse::fail)
        << atl::to_string(kind);
    EXPECT_EQ(fresh.used(), 0);
  }
}

TEST(RestartPolicy, ARankFailureIsAFaultOnlyWhenAskedFor) {
  RestartPolicy plain({10, false});
  EXPECT_EQ(plain.respond(S::command, {FaultKind::rank_failed, "w0", "rank 1 exit 3"}),
            FaultResponse::fail);
  EXPECT_EQ(plain.used(), 0);
  EXPECT_TRUE(plain.history().empty()) << "an ordinary failure is not an attempt's fault";
  RestartPolicy retry({10, true});
  EXPECT_EQ(retry.respond(S::command, {FaultKind::rank_failed, "w0", "rank 1 exit 3"}),
            FaultResponse::restart);
  EXPECT_EQ(retry.used(), 1);
}

TEST(RestartPolicy, EveryKindInEveryStateHasOneAnswer) {
  // The whole table: (state, kind) -> response with a budget left.
  for (S state : atl::kAllJobStates) {
    for (FaultKind kind : kAllKinds) {
      RestartPolicy p({5, false});
      FaultResponse r = p.respond(state, {kind, "w0", "x"});
      FaultResponse want = FaultResponse::carry_on;
      switch (state) {
        case S::pending:
          want = kind == FaultKind::rank_failed     ? FaultResponse::fail
                 : kind == FaultKind::ready_timeout ? FaultResponse::restart
                                                    : FaultResponse::carry_on;
          break;
        case S::initializing:
          want = kind == FaultKind::preflight_failed ? FaultResponse::restart : FaultResponse::fail;
          break;
        case S::command:
          want = kind == FaultKind::rank_failed ? FaultResponse::fail : FaultResponse::restart;
          break;
        case S::restarting:
          want = kind == FaultKind::preflight_failed || kind == FaultKind::ready_timeout
                     ? FaultResponse::restart
                     : FaultResponse::carry_on;
          break;
        case S::debugStop:
        case S::debugCommand:
          want = kind == FaultKind::pod_deleted ? FaultResponse::restart_uncounted
                                                : FaultResponse::carry_on;
          break;
        default:
          want = FaultResponse::carry_on;
      }
      EXPECT_EQ(r, want) << atl::to_string(state) << " + " << atl::to_string(kind) << " -> "
                         << atl::to_string(r);
      EXPECT_EQ(p.used(), r == FaultResponse::restart ? 1 : 0);
    }
  }
}

// Driver mode: a worker that goes while the driver runs does not restart the
// job (the driver goes on, as Ray's does); everything else is as in spmd.
TEST(RestartPolicy, WithoutWorkerLossRestartsOnlyThoseFaultsCarryOn) {
  for (S state : atl::kAllJobStates) {
    for (FaultKind kind : kAllKinds) {
      RestartPolicy spmd({5, true});
      RestartPolicy driver({5, true, false});
      FaultResponse want = spmd.respond(state, {kind, "w0", "x"});
      bool worker_loss = kind == FaultKind::pod_lost || kind == FaultKind::pod_hung ||
                         kind == FaultKind::pod_deleted || kind == FaultKind::gpu_lost;
      if (state == S::command && worker_loss) want = FaultResponse::carry_on;
      EXPECT_EQ(driver.respond(state, {kind, "w0", "x"}), want)
          << atl::to_string(state) << " + " << atl::to_string(kind);
      EXPECT_EQ(driver.used(), want == FaultResponse::restart ? 1 : 0);
    }
  }
}

// The seed: atlctl debug, then delete, restarts the job and costs nothing,
// even with the budget spent.
TEST(RestartPolicy, ADeleteInADebugStateRestartsAndNeverCounts) {
  for (int budget : {0, 1}) {
    RestartPolicy p({budget, false});
    for (S state : {S::debugStop, S::debugCommand}) {
      EXPECT_EQ(p.respond(state, {FaultKind::pod_deleted, "w0", "deleted"}),
                FaultResponse::restart_uncounted);
      EXPECT_EQ(p.respond(state, lost("w0")), FaultResponse::carry_on);
    }
    EXPECT_EQ(p.used(), 0);
    EXPECT_TRUE(p.history().empty());
  }
}

// Pods that never came: retried within the budget, then the job fails.
TEST(RestartPolicy, AReadyTimeoutIsRetriedUntilTheBudgetIsSpent) {
  RestartPolicy p({1, false});
  Fault timeout{FaultKind::ready_timeout, "", "workers not ready after 2s: missing w1"};
  EXPECT_EQ(p.respond(S::pending, timeout), FaultResponse::restart);
  EXPECT_EQ(p.respond(S::restarting, timeout), FaultResponse::fail);
  EXPECT_EQ(p.used(), 1);
  ASSERT_EQ(p.history().size(), 2u);
  EXPECT_EQ(p.history()[1].kind, FaultKind::ready_timeout);
}

TEST(RestartPolicy, CountAndRestore) {
  RestartPolicy p({1, false});
  EXPECT_TRUE(p.count({FaultKind::head_restarted, "", "the head restarted"}));
  EXPECT_FALSE(p.count({FaultKind::head_restarted, "", "the head restarted"}));
  EXPECT_EQ(p.used(), 1);
  RestartPolicy q({3, false});
  q.restore(p.used(), p.history());
  EXPECT_EQ(q.used(), 1);
  EXPECT_EQ(q.history().size(), 2u);
  EXPECT_EQ(q.respond(S::command, lost("w0")), FaultResponse::restart);
  EXPECT_EQ(q.used(), 2);
}
