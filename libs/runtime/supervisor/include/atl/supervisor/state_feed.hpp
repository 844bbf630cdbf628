// StateFeed: the job's state changes in order, for `atlctl status -w`.
//
// A watch asks with the last change it saw (0: none yet, it hears the state
// now) and hears every change after it — at once when there are some, else when the next one
// comes or its own deadline passes (then with none: it asks again). A watch
// that polled the state instead missed every state shorter than its period:
// a restart that spends 0.25 s in `restarting` was never printed (and a
// script waiting for it waited forever). The newest kKept changes are kept;
// a watch further behind hears those and how many it missed.
//
// Plain C++: callers are ReplyIds, answers and deadlines come back as
// effects (FeedEffects) for the shell to perform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/waiter_set.hpp"

namespace atl::supervisor {

using FeedEffect = std::variant<Answer, ArmWaitTimer>;
using FeedEffects = std::vector<FeedEffect>;

class StateFeed {
 public:
  static constexpr std::size_t kKept = 256;
  // The longest a watch is held before it hears "nothing new" (it asks again).
  static constexpr Millis kMaxWait = std::chrono::seconds(30);

  // The answer's text: the newest change's number, then each state after the
  // watch's `seen`, oldest first, space-separated ("7 restarting command");
  // "missed N" before the states when N changes were dropped unseen.
  explicit StateFeed(std::string state);

  std::uint64_t newest() const { return newest_; }
  // The state is now `state` (a change): every held watch hears it.
  void changed(std::string state, FeedEffects& out);
  // A watch that saw up to `seen`, waiting at most `timeout_ms`: its answer
  // now (a new watch, `seen` 0, or one from another head's count, `seen`
  // past the newest: the state now; changes after `seen`; a timeout of 0 or
  // less), or nothing: then await.
  std::optional<Answer> answer_now(std::uint64_t seen, std::int64_t timeout_ms) const;
  void await(std::uint64_t seen, ReplyId reply, Millis timeout, FeedEffects& out);
  void on_wait_timer(WaiterId waiter, FeedEffects& out);
  // The supervisor is going down: every held watch hears the feed as it is.
  void abandon(FeedEffects& out);

  std::size_t held() const { return waiters_.size(); }

 private:
  std::string text_after(std::uint64_t seen) const;

  struct Change {
    std::uint64_t number = 0;
    std::string state;
  };
  std::deque<Change> changes_;                 // the newest kKept, oldest first
  std::uint64_t newest_ = 1;                   // the initial state is change 1
  WaiterSet<std::uint64_t, ReplyId> waiters_;  // by the change each saw
};

}  // namespace atl::supervisor
