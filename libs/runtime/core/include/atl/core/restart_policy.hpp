// RestartPolicy: what a fault does to the job, and the restart budget. Pure:
// the supervisor reports each fault with the state it happened in and
// performs what comes back (restart everything, fail, or carry on).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/lifecycle.hpp"

namespace atl {

// What went wrong; callers branch on it, people read `Fault::detail`.
enum class FaultKind {
  pod_lost,          // its process or connection is gone
  pod_hung,          // silent for the heartbeat timeout
  pod_deleted,       // atlctl delete
  gpu_lost,          // fewer GPU devices than the pod declared, while it ran
  preflight_failed,  // a node failed the checks before a (re)start
  rank_failed,       // a rank exited non-zero (a fault only with restart_on_failure)
  head_restarted,    // the head itself died and was started again
  ready_timeout,     // pods did not all come (back) within the ready timeout
  job_hung,          // every process lived but training stopped (HangWatch's evidence)
};

std::string_view to_string(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::pod_lost;
  std::string pod;     // the pod it concerns; empty when none
  std::string detail;  // one line for people: "pod x was lost (connection closed)"
  // The attempt of user code it ended (logs/attempt-K); 0: not known (a
  // record of an older head). Attempts grow with restarts and recovers alike.
  std::int32_t attempt = 0;
};

enum class FaultResponse {
  restart,            // stop every rank, count one restart, start the job again from scratch
  restart_uncounted,  // the same, at no cost: atlctl delete while the job is
                      // parked in a debug state (the seed: no budget is used)
  fail,               // the job fails (no restart allowed here, or the budget is spent)
  carry_on,           // nothing to restart: user code is not running (debug states, or
                      // a restart already under way); a lost pod is simply awaited
};

std::string_view to_string(FaultResponse response);

struct RestartOptions {
  int max_restarts = 10;            // 0: never restart
  bool restart_on_failure = false;  // a rank exiting non-zero is a fault too
  // A worker pod lost, hung, deleted or short of a GPU while user code runs
  // restarts the job. Driver mode says no: the driver runs on the head and
  // goes on (as Ray's does); the pod is awaited and its placement bundles are
  // placed again.
  bool worker_loss_restarts = true;
};

class RestartPolicy {
 public:
  explicit RestartPolicy(RestartOptions options = {}) : options_(options) {}

  // The response to `fault` in `state`. A restart is counted here: after
  // respond() returns restart, used() is one higher and the fault is in
  // history(). A fail that comes from a spent budget is in history() too.
  FaultResponse respond(JobState state, const Fault& fault);

  // A fault the head counts without asking (its own restart): one restart
  // used, or false when the budget was already spent.
  bool count(const Fault& fault);

  int used() const { return used_; }
  int budget() const { return options_.max_restarts; }
  bool spent() const { return used_ >= options_.max_restarts; }
  const RestartOptions& options() const { return options_; }

  // Every counted fault (and the one that found the budget spent), in order:
  // history()[k] ended attempt k+1.
  const std::vector<Fault>& history() const { return history_; }

  // One line per ended attempt: "attempt 1: pod x was lost (...)".
  std::vector<std::string> attempt_lines() const;

  // Restores a count kept in durable state (a restarted head).
  void restore(int used, std::vector<Fault> history);

 private:
  RestartOptions options_;
  int used_ = 0;
  std::vector<Fault> history_;
};

}  // namespace atl
