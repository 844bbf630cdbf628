// DebugCourse: the guide's `atlctl stop` and `atlctl recover` as operations,
// in plain C++.
//
// A stop has an id (StopId, growing) and a target: user code (every rank, or
// in ray mode the driver alone) or the debug run that held the job in
// debugCommand. It is over once what it stopped has ended, or when its timer
// gives it up; its stop_waits are answered then, and one that comes later
// (after another operator's recover, say) is answered at once: a second
// operator's stop, a late timer or a stop_wait after a recover can never act
// on the wrong stop. A recover is answered once every rank of its attempt has
// started, or failed by its timer (an older attempt's timer finds itself
// moot). The gates say in one line what is still stopping.
//
// A debug run (`atlctl run`, check, burn) is answered once every rank
// started (or failed by its start timer); each run_wait long poll once the
// run has ended, or at its own deadline with the run as it is.
//
// The course holds ReplyIds, never promises: its answers and timers come back
// as data (DebugEffects, in order) for the shell to perform. What it needs of
// the job at each input is a DebugView: the course runs in its tests without
// CAF, processes or clocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/core/expected.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/rank_table.hpp"
#include "atl/core/ray_cluster.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/core/run_status.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/debug_runs.hpp"
#include "atl/supervisor/reply_book.hpp"
#include "atl/supervisor/user_code.hpp"
#include "atl/supervisor/waiter_set.hpp"

namespace atl::supervisor {

using StopId = std::int32_t;

// What a stop waits for: user code (the ranks, or in ray mode the driver),
// or the run that held the job in debugCommand.
struct StopTarget {
  bool user_code = true;
  RunId run = 0;
};

// What the course needs of the job at each input.
struct DebugView {
  JobMode mode = JobMode::spmd;
  const RankTable* code = nullptr;  // user code's ranks (this attempt)
  // Ray mode: how the driver and the Ray nodes are (what recover may do).
  RayProcesses ray;
  // The ranks of a debug run, null when it is unknown or dropped.
  std::function<const RankTable*(RunId)> run;
  // A run's status as run_wait answers it (a run `run` finds), and the line
  // for one it does not find (dropped from the history).
  std::function<RunStatus(RunId)> status;
  std::function<std::string(RunId)> gone;
};

namespace debug {
// Answer a stop_wait or a recover (Answer), or a run's start or run_wait with
// the run's status (AnswerRun, the runs' own book); a run_wait's deadline
// (ArmWaitTimer).
using supervisor::Answer;
using AnswerRun = AnswerWith<RunStatus>;
using supervisor::ArmWaitTimer;
// on_stop_timer(stop) after `after`.
struct ArmStopTimer {
  StopId stop = 0;
  Millis after{0};
};
// on_recover_timer(attempt) after `after`.
struct ArmRecoverTimer {
  std::int32_t attempt = 0;
  Millis after{0};
};
// on_run_start_timer(run) after `after`.
struct ArmRunStartTimer {
  RunId run = 0;
  Millis after{0};
};
}  // namespace debug

using DebugEffect = std::variant<debug::Answer, debug::ArmStopTimer, debug::ArmRecoverTimer,
                                 debug::AnswerRun, debug::ArmRunStartTimer, debug::ArmWaitTimer>;
using DebugEffects = std::vector<DebugEffect>;

// "ranks 0,3" (or "the driver", "the driver and ranks ray-head") of `ranks`
// still starting (`want_started`) or still running; `counts` picks which.
std::string pending_ranks(const RankTable& ranks, bool want_started,
                          const std::function<bool(std::int32_t)>& counts = nullptr);

class DebugCourse {
 public:
  // How long a recover's ranks may take to start.
  static constexpr Millis kStartTimeout = std::chrono::seconds(30);

  // --- atlctl stop -----------------------------------------------------------

  // A new stop of `target`, given up after `timer_after`: its id. Over at
  // once when nothing it stops is running.
  StopId begin_stop(StopTarget target, Millis timer_after, const DebugView& view,
                    DebugEffects& out);
  // The stop under way, if any, and what it waits for.
  const std::optional<StopTarget>& stopping() const { return stopping_; }
  StopId latest_stop() const { return generation_; }

  enum class StopWait { unknown, over, pending };
  // What a stop_wait on `op` finds: unknown (never begun), over (answer ok
  // now) or pending.
  StopWait stop_state(StopId op) const;
  // A stop_wait on `op` (what stop_state says): if pending, `reply` is
  // answered when the stop is over or given up.
  StopWait await_stop(StopId op, ReplyId reply);
  // Everything the current stop ends has ended (true when there is none).
  bool stop_complete(const DebugView& view) const;
  // What the current stop still waits for: "ranks 0,3", "the driver", or
  // "ranks 1 of debug run 4".
  std::string still_stopping(const DebugView& view) const;
  // The timer of stop `op` fired after `waited`: if it is still the stop
  // under way, it is given up and its waiters hear what did not end.
  void on_stop_timer(StopId op, Millis waited, const DebugView& view, DebugEffects& out);

  // --- atlctl recover --------------------------------------------------------

  // Whether a recover may start now, and what it starts: everything, or in
  // ray mode on an intact Ray cluster the driver alone. A refusal says what
  // is still stopping.
  Expected<LaunchScope> recover_scope(const DebugView& view) const;
  // Attempt `attempt` was launched for the recover that waits as `reply`: it
  // is answered once every rank has started (on_progress), or failed after
  // kStartTimeout.
  void recovering(ReplyId reply, std::int32_t attempt, const DebugView& view, DebugEffects& out);
  void on_recover_timer(std::int32_t attempt, const DebugView& view, DebugEffects& out);

  // --- debug runs ------------------------------------------------------------

  // Run `run` was opened for the caller kept as `reply` (a run's own book):
  // answered once every rank started, or failed after kStartTimeout.
  void run_opened(RunId run, ReplyId reply, DebugEffects& out);
  // A run_wait on `run` (not ended yet), kept as `reply`: answered when it
  // ends, or after `timeout` with the run as it is then.
  void await_run(RunId run, ReplyId reply, Millis timeout, DebugEffects& out);
  // A rank of `run` started or ended. The run's status (a record per rank)
  // is built only for an answer that is due: built on every report, a
  // fan-out to 8,000 ranks cost the head 8,000 x 8,000 records, seconds in
  // which 1,000 pods' heartbeats went unread and the pods were lost.
  void on_run_progress(RunId run, const DebugView& view, DebugEffects& out);
  // Whether on_run_progress may answer anyone now (O(1), from the run's
  // counts): the shell builds the view only then.
  bool run_answer_due(RunId run, const RankTable& ranks) const {
    return (run_starts_.count(run) > 0 && ranks.all_started()) ||
           (ranks.all_done() && run_waiters_.waiting_for(run) > 0);
  }
  void on_run_start_timer(RunId run, const DebugView& view, DebugEffects& out);
  void on_run_wait_timer(WaiterId waiter, const DebugView& view, DebugEffects& out);

  // --- all -------------------------------------------------------------------

  // A rank of user code or of a debug run started or ended.
  void on_progress(const DebugView& view, DebugEffects& out);
  // Whether on_progress has anything to look at (a recover owed, a stop
  // under way): the shell builds the view only then.
  bool wants_progress() const { return recover_.has_value() || stopping_.has_value(); }
  // The job ended, or the supervisor is going down: every stop_wait, the
  // recover, every run's start and every run_wait still owed hear `why`
  // (failed).
  void abandon(const std::string& why, const DebugView& view, DebugEffects& out);

  std::size_t owed() const {
    return stop_waiters_.size() + (recover_ ? 1 : 0) + run_starts_.size() + run_waiters_.size();
  }

 private:
  void settle_stop(ReplyCode code, const std::string& text, DebugEffects& out);

  std::optional<StopTarget> stopping_;
  StopId generation_ = 0;
  StopId settled_ = 0;
  // Only the current stop has waiters (a stop_wait on an older one is
  // answered at once): all of them are this stop's.
  std::vector<ReplyId> stop_waiters_;
  struct Recover {
    ReplyId reply = 0;
    std::int32_t attempt = 0;
  };
  std::optional<Recover> recover_;
  std::map<RunId, ReplyId> run_starts_;    // runs whose start is not answered yet
  WaiterSet<RunId, ReplyId> run_waiters_;  // run_wait long polls, by run
};

}  // namespace atl::supervisor
