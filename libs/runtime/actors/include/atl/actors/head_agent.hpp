// The head pod's agent: the head's own processes of user code (the driver,
// and in ray mode Ray's head) run under it as a worker pod's ranks run under
// its node agent, so the supervisor orders them the same way (typed orders,
// atl/core/orders.hpp) and hears of them the same way (ProcessStarted and
// ProcessExit from their executors; an executor that ended without reporting
// is reported failed by this agent, as a node agent does).
//
// It takes, from the supervisor:
//   agent_order::Launch / Run   its processes, as executors here (the driver's
//                               $TORCHELASTIC_ERROR_FILE under $TMPDIR, as a rank's)
//   agent_order::StopRanks      every one of them: SIGTERM, SIGKILL after the grace
//   agent_order::StopStream     the one of that stream (the driver alone: Ray stays up)
//   agent_order::Shutdown       the job ended: every one of them, within `grace`
//   PreflightRequest            the head's working dir (head_dir), on a dir checker
// It never registers, heartbeats or leaves: it lives as long as the head.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <chrono>
#include <string>

namespace atl {

struct HeadAgentConfig {
  std::string pod;                         // the head pod's name (head_pod_name)
  caf::actor sink;                         // the processes' output
  caf::actor supervisor;                   // their reports
  std::chrono::milliseconds grace{10000};  // the job's, for a Shutdown
};

caf::actor spawn_head_agent(caf::actor_system& sys, HeadAgentConfig config);

}  // namespace atl
