// The job lifecycle as a pure state machine: which event moves which state where.
// The JobSupervisor owns one and performs the effects; refusals name the state.
#pragma once

#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

enum class JobState {
  pending,
  initializing,
  command,
  debugStop,
  debugCommand,
  restarting,
  succeeded,
  failed,
};

enum class JobEvent {
  all_joined,       // every expected worker registered
  ready_timeout,    // the ready timeout passed first
  checks_passed,    // every node passed the pre-flight check
  check_failed,     // a node failed it
  ranks_succeeded,  // every rank (or the driver) exited 0
  rank_failed,      // a rank (or the driver) exited non-zero or was killed
  node_lost,        // a worker's connection or process is gone
  cancelled,        // the head was told to end the job (signal)
  head_failed,      // the head cannot go on: an internal error, a log it cannot write
  // The job cannot go on for a reason its state has no transition of its own
  // for (a Ray cluster never ready while the driver ran, spent budget): the
  // controller ends it with that reason rather than stay where it is.
  aborted,
  debug_stop,  // atlctl stop: user code (or the debug command) stopped
  debug_run,   // atlctl run/check/burn without -f
  recover,     // atlctl recover: user code restarted from scratch
  restart,     // a counted fault: every rank stops, the job starts again
};

inline constexpr JobState kAllJobStates[] = {
    JobState::pending,      JobState::initializing, JobState::command,   JobState::debugStop,
    JobState::debugCommand, JobState::restarting,   JobState::succeeded, JobState::failed};
inline constexpr JobEvent kAllJobEvents[] = {
    JobEvent::all_joined,   JobEvent::ready_timeout,   JobEvent::checks_passed,
    JobEvent::check_failed, JobEvent::ranks_succeeded, JobEvent::rank_failed,
    JobEvent::node_lost,    JobEvent::cancelled,       JobEvent::debug_stop,
    JobEvent::debug_run,    JobEvent::recover,         JobEvent::head_failed,
    JobEvent::restart,      JobEvent::aborted};

std::string_view to_string(JobState state);
std::string_view to_string(JobEvent event);
bool is_terminal(JobState state);

// The state `event` leads to from `from`, or an error naming both when the
// event has no meaning there (the caller keeps its state).
Expected<JobState> next_state(JobState from, JobEvent event);

// What atlctl asks of the job; allow() holds the seed's rules for each.
enum class DebugCommand { stop, run, check, burn, recover };

std::string_view to_string(DebugCommand command);

// Whether `command` may run in `state` (`forced`: run -f). The refusal is one
// line naming the state and what to do instead.
Status allow(DebugCommand command, JobState state, bool forced = false);

// Holds the current state; apply() changes it only on a legal transition.
class Lifecycle {
 public:
  JobState state() const { return state_; }
  Expected<JobState> apply(JobEvent event);

 private:
  JobState state_ = JobState::pending;
};

}  // namespace atl
