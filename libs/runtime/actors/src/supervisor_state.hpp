// The JobSupervisor's shell state: the Supervisor (the job's course, plain
// C++) and the CAF handles its ids stand for, and the functions the shell's
// files share (its interfaces, status, named actors, terminals).
#pragma once

#include <unistd.h>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_handler.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_response_promise.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "atl/actors/job_supervisor.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/lifecycle.hpp"
#include "atl/core/placement.hpp"
#include "atl/core/rank_table.hpp"
#include "atl/core/ray_cluster.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/core/restart_policy.hpp"
#include "atl/core/stacks.hpp"
#include "atl/core/taints.hpp"
#include "atl/os/logging.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/handle_map.hpp"
#include "atl/supervisor/reply_book.hpp"
#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {

// A joined pod's record (its agent as the Supervisor's AgentId).
using JoinedPod = Supervisor::Pods::Registry::Joined;

// atlctl commands are answered (ReplyCode on the wire, atlctl's exit status; text).
using Promise = caf::typed_response_promise<std::int32_t, std::string>;
using Result = caf::result<std::int32_t, std::string>;

// A task's start and each task_wait are answered with its TaskStatus.
using TaskPromise = caf::typed_response_promise<std::int32_t, std::string, TaskStatus>;
using TaskResult = caf::result<std::int32_t, std::string, TaskStatus>;

// A debug run's start and each run_wait are answered with its RunStatus
// (code, a line when refused or failed, the status).
using RunPromise = caf::typed_response_promise<std::int32_t, std::string, RunStatus>;
using RunResult = caf::result<std::int32_t, std::string, RunStatus>;

// Whom the Supervisor's effects go to: each joined pod's agent (until
// forgotten), each named actor's host (until unwatched), each executor whose
// process's control line waits for its answer, the head's own executors
// (the driver, and in ray mode Ray's head).
struct Peers {
  HandleMap<AgentId, caf::actor> agents;
  HandleMap<OwnerId, caf::actor> owners;  // drivers' connections (their bridges), watched
  HandleMap<HostId, caf::actor> hosts;
  HandleMap<ExecutorRef, caf::actor> executors;
  caf::actor driver;
  caf::actor ray_head;
};

// The callers answered later (stop, recover, pg_wait, named actors' calls;
// runs; tasks): the Supervisor holds their ReplyIds.
struct Replies {
  ReplyBook<Promise> plain;
  ReplyBook<RunPromise> runs;
  ReplyBook<TaskPromise> tasks;
};

struct State {
  SupervisorConfig config;
  // Performs the Supervisor's effects as they are put (job_supervisor.cpp),
  // the journal's writes included; declared first: it outlives the Supervisor.
  std::unique_ptr<Outbox> outbox;
  // The job's course (atl/supervisor/supervisor.hpp), on the system clock.
  std::unique_ptr<Supervisor> sup;
  Peers peers;
  Replies replies;

  const JobSpec& job() const { return sup->job(); }
  JobController& controller() { return sup->controller(); }
  const UserCode& code() const { return sup->code(); }
  JobState state() const { return sup->state(); }
  // The actor of `pod`'s agent, or null when it has none (not joined).
  const caf::actor* agent_of(const std::string& pod) const {
    auto id = sup->agent_of(pod);
    return id ? peers.agents.find(*id) : nullptr;
  }
};

// The supervisor's log (the head's log file and stderr).
const std::shared_ptr<spdlog::logger>& supervisor_log();

using Actor = caf::stateful_actor<State>;

// An answer given now: the Supervisor's, or its refusal (none: ok).
inline Result answer(const Answer& a) { return {wire(a.code), a.text}; }
inline Result answer(const std::optional<Refusal>& no) {
  return no ? Result{wire(no->code), no->text} : Result{wire(ReplyCode::ok), std::string()};
}

// An answer a piece gave to a request the shell kept in `book`: delivered
// once (a promise taken already, or no longer pending, takes nothing).
template <class Promise>
void deliver(ReplyBook<Promise>& book, const Answer& a) {
  if (auto p = book.take(a.reply); p && p->pending()) p->deliver(wire(a.code), a.text);
}
template <class Promise, class Status>
void deliver(ReplyBook<Promise>& book, const AnswerWith<Status>& a) {
  if (auto p = book.take(a.reply); p && p->pending()) p->deliver(wire(a.code), a.text, a.status);
}

// Shared between the halves.
std::int64_t unix_ms_now();
// A report counts only from the node of the pod it names (a lost pod's late
// reports, a peer speaking for another pod: dropped, with a warning).
bool sent_from_pod(Actor* self, const std::string& pod);
// Every atlctl still waiting (stop, run, recover, run_wait) gets (1, why): the
// job ended, or the supervisor is going down, before its command finished.
void answer_owed_replies(Actor* self, const std::string& why);
// atlctl stop: (code, a line when refused, the stop's id to wait for).
using StopResult = caf::result<std::int32_t, std::string, std::int32_t>;

// The supervisor's interfaces, each in a file of its own (one behaviour is
// their or_else): atlctl's commands (supervisor_control_api.cpp) and the C
// API's (supervisor_driver_api.cpp: placement, tasks, named actors). The
// workers' and executors' messages are in job_supervisor.cpp.
caf::message_handler worker_api(Actor* self);  // supervisor_worker_api.cpp
caf::message_handler control_api(Actor* self);
caf::message_handler driver_api(Actor* self);
caf::message_handler terminal_api(Actor* self);  // supervisor_terminal.cpp

}  // namespace atl::supervisor
