// The JobSupervisor's shell state: the Supervisor (the job's course, plain
// C++) and the CAF handles its ids stand for, and the functions the shell's
// files share (its interfaces, status, named actors, terminals).
#pragma once

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_handler.hpp>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "atl/actors/job_supervisor.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/os/logging.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/reply_book.hpp"
#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {

// Requests are answered with a code (ReplyCode on the wire, atlctl's exit
// status) and a line; a task's and a debug run's with their status too.
using Result = caf::result<std::int32_t, std::string>;
using TaskResult = caf::result<std::int32_t, std::string, TaskStatus>;
using RunResult = caf::result<std::int32_t, std::string, RunStatus>;

struct State {
  SupervisorConfig config;
  // Performs the Supervisor's effects as they are put (job_supervisor.cpp),
  // the journal's writes included; declared first: it outlives the Supervisor.
  std::unique_ptr<Outbox> outbox;
  // The job's course (atl/supervisor/supervisor.hpp), on the system clock.
  std::unique_ptr<Supervisor> sup;
  // The handles its ids stand for (Peers: atl/supervisor/supervisor.hpp).
  Peers<caf::actor> peers;
  // The callers answered later (stop, recover, runs, tasks, pg_wait, named
  // actors' calls, diagnose): the Supervisor holds their ReplyIds.
  ReplyBook<caf::response_promise> replies;

  const JobSpec& job() const { return sup->job(); }
  JobState state() const { return sup->state(); }
};

// The supervisor's log (the head's log file and stderr).
const std::shared_ptr<spdlog::logger>& supervisor_log();

using Actor = caf::stateful_actor<State>;

// An answer given now: the Supervisor's, or its refusal (none: ok).
inline Result answer(const Answer& a) { return {wire(a.code), a.text}; }
inline Result answer(const std::optional<Refusal>& no) {
  return no ? Result{wire(no->code), no->text} : Result{wire(ReplyCode::ok), std::string()};
}

// An answer given now as the request's result: a refusal (with an empty
// status where the reply has one), an Answer, an answer with its status.
template <class... Ts, class Now>
caf::result<Ts...> reply_now(const Now& n, caf::result<Ts...>*) {
  if constexpr (sizeof...(Ts) == 2) {
    return {wire(n.code), n.text};
  } else if constexpr (std::is_same_v<Now, Refusal>) {
    return {wire(n.code), n.text, std::tuple_element_t<2, std::tuple<Ts...>>{}};
  } else {
    return {wire(n.code), n.text, n.status};
  }
}

// A request the Supervisor answers now (`ask` returns that answer) or later,
// to the ReplyId `ask`'s `keep()` gives it: the promise is made only then.
// (In CAF 0.17 a promise made takes the request over: a refusal returned
// after one was made would never be sent.)
template <class Result, class Ask>
Result now_or_later(Actor* self, Ask ask) {
  caf::response_promise promise;
  auto now = ask([&] {
    promise = self->make_response_promise();
    return self->state.replies.keep(promise);
  });
  if (now) return reply_now(*now, static_cast<Result*>(nullptr));
  return promise;
}

// The requests the Supervisor answers now or later (Supervisor::on(request,
// keep)), one handler each; `Result`: their answer on the wire.
template <class Result, class... Requests>
caf::message_handler kept(Actor* self) {
  return {[self](const Requests& r) {
    return now_or_later<Result>(self, [&](auto keep) { return self->state.sup->on(r, keep); });
  }...};
}

// The requests it answers at once (Supervisor::on(request)).
template <class... Requests>
caf::message_handler at_once(Actor* self) {
  return {[self](const Requests& r) -> Result { return answer(self->state.sup->on(r)); }...};
}

// An answer a piece gave to a request kept: delivered once (a promise taken
// already, or no longer pending, takes nothing).
template <class... Ts>
void deliver(Actor* self, ReplyId reply, Ts&&... xs) {
  if (auto p = self->state.replies.take(reply); p && p->pending())
    p->deliver(std::forward<Ts>(xs)...);
}

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
