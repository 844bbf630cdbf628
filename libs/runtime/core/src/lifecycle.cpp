#include "atl/core/lifecycle.hpp"

#include <string>

namespace atl {

std::string_view to_string(JobState state) {
  switch (state) {
    case JobState::pending:
      return "pending";
    case JobState::initializing:
      return "initializing";
    case JobState::command:
      return "command";
    case JobState::debugStop:
      return "debugStop";
    case JobState::debugCommand:
      return "debugCommand";
    case JobState::restarting:
      return "restarting";
    case JobState::succeeded:
      return "succeeded";
    case JobState::failed:
      return "failed";
  }
  return "unknown";
}

std::string_view to_string(JobEvent event) {
  switch (event) {
    case JobEvent::all_joined:
      return "all_joined";
    case JobEvent::ready_timeout:
      return "ready_timeout";
    case JobEvent::checks_passed:
      return "checks_passed";
    case JobEvent::check_failed:
      return "check_failed";
    case JobEvent::ranks_succeeded:
      return "ranks_succeeded";
    case JobEvent::rank_failed:
      return "rank_failed";
    case JobEvent::node_lost:
      return "node_lost";
    case JobEvent::cancelled:
      return "cancelled";
    case JobEvent::debug_stop:
      return "debug_stop";
    case JobEvent::debug_run:
      return "debug_run";
    case JobEvent::recover:
      return "recover";
    case JobEvent::head_failed:
      return "head_failed";
    case JobEvent::restart:
      return "restart";
    case JobEvent::aborted:
      return "aborted";
  }
  return "unknown";
}

bool is_terminal(JobState state) {
  return state == JobState::succeeded || state == JobState::failed;
}

Expected<JobState> next_state(JobState from, JobEvent event) {
  using S = JobState;
  using E = JobEvent;
  // A cancelled job, one whose head cannot go on, or one that cannot go on
  // for any other reason fails from any live state.
  if ((event == E::cancelled || event == E::head_failed || event == E::aborted) &&
      !is_terminal(from))
    return S::failed;
  switch (from) {
    case S::pending:
      if (event == E::all_joined) return S::initializing;
      if (event == E::ready_timeout) return S::failed;
      // Pods that never came within the ready timeout: a counted fault, and
      // the job waits again for them as after any restart.
      if (event == E::restart) return S::restarting;
      // A worker that leaves before the others joined is simply missing again.
      if (event == E::node_lost) return S::pending;
      break;
    case S::initializing:
      if (event == E::checks_passed) return S::command;
      // A node failed the first pre-flight and a spare can take its place.
      if (event == E::restart) return S::restarting;
      if (event == E::check_failed || event == E::node_lost) return S::failed;
      break;
    case S::command:
      if (event == E::ranks_succeeded) return S::succeeded;
      // A fault with restarts left restarts; without, it fails the job.
      if (event == E::restart) return S::restarting;
      if (event == E::rank_failed || event == E::node_lost) return S::failed;
      if (event == E::debug_stop) return S::debugStop;
      break;
    case S::restarting:
      // Ranks stop, pods are awaited (a lost one again too), the pre-flight
      // runs again; then user code starts from scratch.
      if (event == E::checks_passed) return S::command;
      if (event == E::restart || event == E::node_lost) return S::restarting;
      if (event == E::check_failed || event == E::ready_timeout) return S::failed;
      break;
    case S::debugStop:
      // Stopping again is harmless: the cluster is already parked.
      if (event == E::debug_stop) return S::debugStop;
      if (event == E::debug_run) return S::debugCommand;
      if (event == E::recover) return S::command;
      // No user code runs: a lost pod is awaited, at no cost.
      if (event == E::node_lost) return S::debugStop;
      // atlctl delete: the job starts again once the pods are back (the seed:
      // 删除后任务会自动重启), still at no cost.
      if (event == E::restart) return S::restarting;
      break;
    case S::debugCommand:
      if (event == E::debug_stop) return S::debugStop;
      if (event == E::node_lost) return S::debugCommand;
      if (event == E::restart) return S::restarting;
      break;
    default:
      break;
  }
  return make_error("event " + std::string(to_string(event)) + " is not allowed in state " +
                    std::string(to_string(from)));
}

std::string_view to_string(DebugCommand command) {
  switch (command) {
    case DebugCommand::stop:
      return "stop";
    case DebugCommand::run:
      return "run";
    case DebugCommand::check:
      return "check";
    case DebugCommand::burn:
      return "burn";
    case DebugCommand::recover:
      return "recover";
  }
  return "unknown";
}

Status allow(DebugCommand command, JobState state, bool forced) {
  using S = JobState;
  const std::string name(to_string(command));
  const std::string in_state = "job is in state " + std::string(to_string(state));
  if (is_terminal(state)) return make_error(in_state + ": it has ended, " + name + " is refused");
  if (state == S::pending || state == S::initializing || state == S::restarting) {
    return make_error(in_state + ": user code is not running yet; retry " + name +
                      " once the status is command");
  }
  switch (command) {
    case DebugCommand::stop:
      return Ok{};  // command, debugStop (again) and debugCommand all stop
    case DebugCommand::recover:
      if (state == S::debugStop) return Ok{};
      if (state == S::debugCommand) {
        return make_error(
            in_state + ": a debug command is still active; run atlctl stop, then atlctl recover");
      }
      return make_error(in_state + ": recover only works from debugStop (run atlctl stop first)");
    case DebugCommand::run:
    case DebugCommand::check:
    case DebugCommand::burn:
      if (forced && command == DebugCommand::run) return Ok{};
      if (state == S::debugStop) return Ok{};
      if (state == S::debugCommand) {
        return make_error(in_state +
                          ": the previous run/check/burn must be ended with atlctl stop before " +
                          name);
      }
      return make_error(in_state + ": " + name + " needs debugStop (run atlctl stop first" +
                        (command == DebugCommand::run ? ", or use run -f)" : ")"));
  }
  return make_error("unknown command");
}

Expected<JobState> Lifecycle::apply(JobEvent event) {
  auto next = next_state(state_, event);
  if (next) state_ = *next;
  return next;
}

}  // namespace atl
