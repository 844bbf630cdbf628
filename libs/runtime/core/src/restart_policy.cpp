#include "atl/core/restart_policy.hpp"

namespace atl {

std::string_view to_string(FaultKind kind) {
  switch (kind) {
    case FaultKind::pod_lost:
      return "pod_lost";
    case FaultKind::pod_hung:
      return "pod_hung";
    case FaultKind::pod_deleted:
      return "pod_deleted";
    case FaultKind::gpu_lost:
      return "gpu_lost";
    case FaultKind::preflight_failed:
      return "preflight_failed";
    case FaultKind::rank_failed:
      return "rank_failed";
    case FaultKind::head_restarted:
      return "head_restarted";
    case FaultKind::ready_timeout:
      return "ready_timeout";
    case FaultKind::job_hung:
      return "job_hung";
  }
  return "unknown";
}

std::string_view to_string(FaultResponse response) {
  switch (response) {
    case FaultResponse::restart:
      return "restart";
    case FaultResponse::restart_uncounted:
      return "restart_uncounted";
    case FaultResponse::fail:
      return "fail";
    case FaultResponse::carry_on:
      return "carry_on";
  }
  return "unknown";
}

FaultResponse RestartPolicy::respond(JobState state, const Fault& fault) {
  using S = JobState;
  switch (state) {
    case S::pending:
      // Before the job ever started, a pod that leaves is just missing again;
      // pods that never came within the ready timeout cost a restart (the
      // seed: a clear error, then retried per the policy).
      if (fault.kind == FaultKind::rank_failed) return FaultResponse::fail;
      if (fault.kind != FaultKind::ready_timeout) return FaultResponse::carry_on;
      break;
    case S::initializing:
      // The first pre-flight: a node that failed it is tainted and (the
      // supervisor asks only when a spare can take its place) costs a restart.
      // A node that leaves during it is a setup problem to see at once.
      if (fault.kind != FaultKind::preflight_failed) return FaultResponse::fail;
      break;
    case S::debugStop:
    case S::debugCommand:
      // User code is parked. A delete restarts the job once the pods are
      // back, and the seed says it costs nothing (删除后任务会自动重启; debug
      // then delete 不会消耗用户任务容错次数). Any other loss: the pod comes
      // back and is awaited.
      return fault.kind == FaultKind::pod_deleted ? FaultResponse::restart_uncounted
                                                  : FaultResponse::carry_on;
    case S::restarting:
      // A restart is already under way: ranks are stopping and pods are
      // awaited. Only a failed pre-flight of the new attempt, or pods still
      // missing at its ready timeout, cost another.
      if (fault.kind != FaultKind::preflight_failed && fault.kind != FaultKind::ready_timeout)
        return FaultResponse::carry_on;
      break;
    case S::command:
      if (fault.kind == FaultKind::rank_failed && !options_.restart_on_failure)
        return FaultResponse::fail;
      if (!options_.worker_loss_restarts &&
          (fault.kind == FaultKind::pod_lost || fault.kind == FaultKind::pod_hung ||
           fault.kind == FaultKind::pod_deleted || fault.kind == FaultKind::gpu_lost))
        return FaultResponse::carry_on;
      break;
    case S::succeeded:
    case S::failed:
      return FaultResponse::carry_on;  // it has ended: nothing changes
  }
  history_.push_back(fault);
  if (spent()) return FaultResponse::fail;
  ++used_;
  return FaultResponse::restart;
}

bool RestartPolicy::count(const Fault& fault) {
  history_.push_back(fault);
  if (spent()) return false;
  ++used_;
  return true;
}

std::vector<std::string> RestartPolicy::attempt_lines() const {
  std::vector<std::string> lines;
  for (size_t i = 0; i < history_.size(); ++i) {
    // Numbered as logs/attempt-K is: a recover starts an attempt without a fault.
    const std::int32_t k =
        history_[i].attempt > 0 ? history_[i].attempt : static_cast<std::int32_t>(i + 1);
    lines.push_back("attempt " + std::to_string(k) + ": " + history_[i].detail);
  }
  return lines;
}

void RestartPolicy::restore(int used, std::vector<Fault> history) {
  used_ = used;
  history_ = std::move(history);
}

}  // namespace atl
