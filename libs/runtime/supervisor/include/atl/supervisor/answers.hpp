// The effects several pieces share: answering a request the shell keeps as a
// ReplyId (ReplyBook), a long poll's deadline, a line for the head's log.
// Each piece's own effects (DebugEffects, TaskEffects, PlacementEffects, ...)
// are a variant of these and of its own.
#pragma once

#include <string>

#include "atl/core/duration.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/supervisor/reply_book.hpp"
#include "atl/supervisor/waiter_set.hpp"

namespace atl::supervisor {

// Answer the request kept as `reply` (0: the request's own answer, now).
struct Answer {
  ReplyId reply = 0;
  ReplyCode code = ReplyCode::ok;
  std::string text;
};

// The same with a status (a run's, a task's) after the line.
template <class Status>
struct AnswerWith {
  ReplyId reply = 0;
  ReplyCode code = ReplyCode::ok;
  std::string text;
  Status status{};
};

// A long poll's deadline: the piece's on_wait_timer(waiter) after `after`.
struct ArmWaitTimer {
  WaiterId waiter = 0;
  Millis after{0};
};

// A line for the head's log (a warning when `warn`).
struct Say {
  bool warn = false;
  std::string text;
};

}  // namespace atl::supervisor
