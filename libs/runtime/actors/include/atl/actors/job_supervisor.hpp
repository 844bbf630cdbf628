// JobSupervisor: the head's owner of one job. Waits for the workers, checks
// them, launches the entrypoint (per rank, or once as the driver), follows the
// ranks to the end and tears the cluster down. Lifecycle rules live in core.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "atl/core/job_spec.hpp"
#include "atl/supervisor/settings.hpp"

namespace atl::os {
class JobStore;
struct JobRecord;
}  // namespace atl::os

namespace atl {

struct SupervisorConfig {
  // What the Supervisor is made from: the job, the head's address (host part
  // of ATL_ADDRESS) and DNS name, Ray's commands and token, how long the
  // ended job stays (linger), the history kept, the web terminals
  // (atl/supervisor/settings.hpp). The head's interface, clock ticks and
  // TMPDIR are read from this machine at the start when left empty.
  supervisor::SupervisorSettings settings;
  caf::actor sink;                             // the head's LogSink
  std::shared_ptr<std::promise<int>> outcome;  // 0 succeeded, 1 failed
  // Set once the job is ending (workers are told to leave): from then on a
  // worker that exits is not recreated (headnode --local-workers reads it).
  std::shared_ptr<std::atomic<bool>> ending = std::make_shared<std::atomic<bool>>(false);
  // Durable state (null: none is kept). `resumed`: this job's record found in
  // it at start: a head restarted on the same state dir carries on from it.
  std::shared_ptr<os::JobStore> store = nullptr;
  std::shared_ptr<const os::JobRecord> resumed = nullptr;
  // The head's LogReader (spawn_log_reader): atlctl's and the C API's log
  // reads go there, not through the LogSink's mailbox.
  caf::actor reader{};
  // Testing only (headnode reads ATL_TESTING_SUPERVISOR_THROW=info): the info
  // handler (status -v/--json) throws, to prove that an exception fails the
  // job and ends the head, never hangs it.
  bool testing_throw_on_info = false;
};

// Hands `code` over once; a later call (the supervisor ending after it already
// released the outcome) does nothing.
void settle_outcome(std::promise<int>& outcome, int code);

// Messages it takes (besides the workers' and executors'):
//   (start_atom, uint16 port)  once published: starts the ready timeout
//   (status_atom) -> string     the state name, as `atlctl status` prints it
//   (StateWatch) -> (int32, string)  status -w: the state changes after the
//                               watch's last (StateFeed's text), at once or held
//                               until the next change or the request's timeout
//   (info_atom) -> string       JSON: state, pods, ranks, failure reason
//   (info_atom, StatusPage) -> string  the same with a page of the ranks, pods and
//                               runs (limit < 0: all); counts and totals always whole
//   (NodeToolRequest | RunCommand | RunWait) -> (int32, string, RunStatus)  atlctl
//                               check/burn/run once started, a run once ended
//   (StopWait | Recover | Diagnose) -> (int32, string)  atlctl stop's wait, recover,
//                               diagnose, once done (typed: atl/core/requests.hpp)
//   (GroupRequest) / (TaskRequest)  a driver's placement group / task (the C API)
//   (cancel_atom, string why)   ends the job as failed (e.g. SIGTERM)
//   (disk_error_atom, string)   from the LogSink: a log cannot be written; the job fails
//   (events_atom) -> string     JSON: the job's timeline (atlctl events)
//   (dashboard_atom) -> (int32, string)  0 and JSON {url, token}; 1 and why when it is off
//   (DeletePods) -> (int32, string)  atlctl delete: those pods leave and
//                               are recreated; in command the job restarts (one restart)
// Workers send (heartbeat_atom, string pod) every heartbeat interval and get
// (heartbeat_atom) back; a node silent for the timeout is lost, fenced and,
// in command, the job restarts (RestartPolicy decides) from scratch.
// An exception in a handler fails the job (one line naming it), shuts the
// workers down and settles the outcome as 1: the head never hangs on it.
//   (LogRead) -> LogChunks      delegated to the LogReader
caf::actor spawn_job_supervisor(caf::actor_system& sys, SupervisorConfig config);

}  // namespace atl
