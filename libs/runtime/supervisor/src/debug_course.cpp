#include "atl/supervisor/debug_course.hpp"

#include <algorithm>

#include "atl/core/log_stream.hpp"

namespace atl::supervisor {

namespace {

// What a stop of user code ends: every rank, or in ray mode the driver alone
// (the Ray cluster stays up for debugging).
bool stops_with_user_code(JobMode mode, std::int32_t stream) {
  return mode != JobMode::ray || stream == kDriverStream;
}

bool user_code_stopped(const DebugView& view) {
  if (view.mode != JobMode::ray) return view.code->all_done();
  auto driver = view.code->find(kDriverStream);  // ray mode: the driver alone
  return driver == view.code->end() || driver->second.done;
}

std::string still_stopping_line(const RankTable& ranks) {
  return "job is in state debugStop but " + pending_ranks(ranks, false) +
         " are still stopping; retry recover in a moment";
}

}  // namespace

std::string pending_ranks(const RankTable& ranks, bool want_started,
                          const std::function<bool(std::int32_t)>& counts) {
  std::string out;
  bool driver = false;
  for (const auto& [rank, r] : ranks) {
    bool pending = want_started ? (!r.started && !r.done) : !r.done;
    if (!pending || (counts && !counts(rank))) continue;
    if (rank == kDriverStream) {
      driver = true;
      continue;
    }
    out += (out.empty() ? "" : ",") + (rank == kRayHeadStream ? "ray-head" : std::to_string(rank));
  }
  if (out.empty()) return driver ? "the driver" : "ranks (none)";
  return (driver ? "the driver and ranks " : "ranks ") + out;
}

StopId DebugCourse::begin_stop(StopTarget target, Millis timer_after, const DebugView& view,
                               DebugEffects& out) {
  stopping_ = target;
  const StopId op = ++generation_;
  out.push_back(debug::ArmStopTimer{op, timer_after});
  if (stop_complete(view)) settle_stop(ReplyCode::ok, "", out);  // nothing was running
  return op;
}

DebugCourse::StopWait DebugCourse::stop_state(StopId op) const {
  if (op < 1 || op > generation_) return StopWait::unknown;
  // Over: maybe another operator recovered the job since.
  return op <= settled_ ? StopWait::over : StopWait::pending;
}

DebugCourse::StopWait DebugCourse::await_stop(StopId op, ReplyId reply) {
  const StopWait state = stop_state(op);
  if (state == StopWait::pending) stop_waiters_.push_back(reply);
  return state;
}

bool DebugCourse::stop_complete(const DebugView& view) const {
  if (!stopping_) return true;
  if (stopping_->user_code) return user_code_stopped(view);
  const RankTable* run = view.run ? view.run(stopping_->run) : nullptr;
  return !run || run->all_done();
}

std::string DebugCourse::still_stopping(const DebugView& view) const {
  if (!stopping_ || stopping_->user_code)
    return pending_ranks(*view.code, false, [&](std::int32_t stream) {
      return stops_with_user_code(view.mode, stream);
    });
  if (const RankTable* run = view.run ? view.run(stopping_->run) : nullptr)
    return pending_ranks(*run, false) + " of debug run " + std::to_string(stopping_->run);
  return "debug run " + std::to_string(stopping_->run);
}

void DebugCourse::on_stop_timer(StopId op, Millis waited, const DebugView& view,
                                DebugEffects& out) {
  if (op != generation_ || op <= settled_) return;  // an older stop's, or over
  settle_stop(ReplyCode::failed,
              still_stopping(view) + " did not report their end within " + format_duration(waited),
              out);
}

Expected<LaunchScope> DebugCourse::recover_scope(const DebugView& view) const {
  if (view.mode == JobMode::ray) {
    switch (ray_recovery(view.ray)) {
      case RayRecovery::driver_only:
        return LaunchScope::driver_only;
      case RayRecovery::whole_cluster:
        return LaunchScope::everything;
      case RayRecovery::driver_stopping:
      case RayRecovery::cluster_stopping:
        return make_error(still_stopping_line(*view.code));
    }
  }
  if (!stop_complete(view) || !view.code->all_done())
    return make_error(still_stopping_line(*view.code));
  return LaunchScope::everything;
}

void DebugCourse::recovering(ReplyId reply, std::int32_t attempt, const DebugView& view,
                             DebugEffects& out) {
  if (recover_) {
    // A stop ended the older recover's attempt before its ranks all started.
    out.push_back(debug::Answer{recover_->reply, ReplyCode::failed,
                                "attempt " + std::to_string(recover_->attempt) +
                                    " was stopped before all its ranks started; attempt " +
                                    std::to_string(attempt) + " is starting"});
  }
  recover_ = Recover{reply, attempt};
  // Tagged with the attempt: an earlier recover's timer finds a newer one.
  out.push_back(debug::ArmRecoverTimer{attempt, kStartTimeout});
  on_progress(view, out);  // nothing to start (no ranks) answers at once
}

void DebugCourse::on_recover_timer(std::int32_t attempt, const DebugView& view, DebugEffects& out) {
  if (!recover_ || recover_->attempt != attempt) return;
  out.push_back(debug::Answer{
      recover_->reply, ReplyCode::failed,
      pending_ranks(*view.code, true) + " did not start within " + format_duration(kStartTimeout)});
  recover_.reset();
}

void DebugCourse::run_opened(RunId run, ReplyId reply, DebugEffects& out) {
  run_starts_[run] = reply;
  out.push_back(debug::ArmRunStartTimer{run, kStartTimeout});
}

void DebugCourse::await_run(RunId run, ReplyId reply, Millis timeout, DebugEffects& out) {
  const WaiterId waiter = run_waiters_.add(run, reply);
  out.push_back(debug::ArmWaitTimer{waiter, std::max(timeout, Millis(1))});
}

void DebugCourse::on_run_progress(RunId run, const DebugView& view, DebugEffects& out) {
  const RankTable* ranks = view.run(run);
  if (!ranks || !run_answer_due(run, *ranks)) return;
  auto start = run_starts_.find(run);
  const bool answer_start = start != run_starts_.end() && ranks->all_started();
  const bool answer_waits = ranks->all_done() && run_waiters_.waiting_for(run) > 0;
  const RunStatus status = view.status(run);  // once, for the answers due now
  if (answer_start) {
    out.push_back(debug::AnswerRun{start->second, ReplyCode::ok, "", status});
    run_starts_.erase(start);
  }
  if (answer_waits)
    for (ReplyId reply : run_waiters_.take(run))
      out.push_back(debug::AnswerRun{reply, ReplyCode::ok, "", status});
}

void DebugCourse::on_run_start_timer(RunId run, const DebugView& view, DebugEffects& out) {
  auto start = run_starts_.find(run);
  if (start == run_starts_.end()) return;  // answered meanwhile
  const RankTable* ranks = view.run(run);
  out.push_back(debug::AnswerRun{start->second, ReplyCode::failed,
                                 (ranks ? pending_ranks(*ranks, true) : view.gone(run)) +
                                     " did not start within " + format_duration(kStartTimeout),
                                 ranks ? view.status(run) : RunStatus{}});
  run_starts_.erase(start);
}

void DebugCourse::on_run_wait_timer(WaiterId waiter, const DebugView& view, DebugEffects& out) {
  auto expired = run_waiters_.expire(waiter);
  if (!expired) return;  // answered meanwhile
  const auto& [run, reply] = *expired;
  if (view.run(run)) {
    out.push_back(debug::AnswerRun{reply, ReplyCode::ok, "", view.status(run)});
  } else {  // ended and dropped from the history while this poll waited
    out.push_back(debug::AnswerRun{reply, ReplyCode::failed, view.gone(run), RunStatus{}});
  }
}

void DebugCourse::on_progress(const DebugView& view, DebugEffects& out) {
  if (recover_ && view.code->all_started()) {
    out.push_back(debug::Answer{recover_->reply, ReplyCode::ok, ""});
    recover_.reset();
  }
  // Settled once what it stops has ended, waited for or not: an operator's
  // stop_wait that arrives after another's recover must find its stop over,
  // not the new attempt running.
  if (stopping_ && stop_complete(view)) settle_stop(ReplyCode::ok, "", out);
}

void DebugCourse::abandon(const std::string& why, const DebugView& view, DebugEffects& out) {
  settle_stop(ReplyCode::failed, why, out);
  if (recover_) {
    out.push_back(debug::Answer{recover_->reply, ReplyCode::failed, why});
    recover_.reset();
  }
  for (const auto& [run, reply] : run_starts_)
    out.push_back(debug::AnswerRun{reply, ReplyCode::failed, why,
                                   view.run(run) ? view.status(run) : RunStatus{}});
  run_starts_.clear();
  for (ReplyId reply : run_waiters_.take_all())
    out.push_back(debug::AnswerRun{reply, ReplyCode::failed, why, RunStatus{}});
}

void DebugCourse::settle_stop(ReplyCode code, const std::string& text, DebugEffects& out) {
  for (ReplyId reply : stop_waiters_) out.push_back(debug::Answer{reply, code, text});
  stop_waiters_.clear();
  stopping_.reset();
  settled_ = generation_;
}

}  // namespace atl::supervisor
