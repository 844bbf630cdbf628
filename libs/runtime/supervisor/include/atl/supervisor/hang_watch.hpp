// HangWatch: whether a training job whose processes all live has stopped
// making progress, and on what evidence. Fed each rank's progress samples
// (the node agents sample them with their heartbeats: output lines, explicit
// progress signals, CPU time and process state of the rank's tree) and,
// when it asks, a diagnosis of the ranks' stacks. Silence alone never acts:
// a job silent for the hang timeout is *suspect*; it is *hung* only on
// evidence — ranks stopped (T) or in uninterruptible sleep (D) while their
// peers wait (seen at once), or, once the stacks are in, ranks whose stacks
// stand apart from the rest, else every rank idle (no CPU time gained) for
// the whole timeout: the stacks come first, so a rank asleep in its step
// while its peers wait in the collective (all idle) is named, not missed. A job silent by design
// whose ranks keep computing stays suspect, said once per timeout, and is
// never acted on. Plain C++, fed the time: tested in fake time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/duration.hpp"

namespace atl::supervisor {

// One rank's progress as sampled: counters only grow within an attempt.
struct RankProgress {
  std::int64_t output_lines = 0;  // lines it wrote so far
  std::int64_t steps = 0;         // explicit signals so far (atl.progress, $ATL_PROGRESS_FILE)
  std::int64_t cpu_ticks = 0;     // CPU time of its process tree, in clock ticks
  // The state that matters most in its tree: 'T' (stopped) over 'D'
  // (uninterruptible sleep) over 'R' (running) over 'S' (sleeping).
  char state = 'S';
};

class HangWatch {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  struct Verdict {
    enum class Kind {
      suspect,    // silent for the timeout: diagnose the stacks (diagnosed() decides)
      hung,       // evidence: act on it (culprits may be empty: every rank idle)
      harmless,   // suspect, but every rank computes and none stands apart: no action
      recovered,  // progress again after a suspect period
    };
    Kind kind = Kind::suspect;
    std::vector<std::int32_t> culprits;  // ranks to blame, ascending
    std::string reason;                  // one line: what was seen
  };

  // `timeout` 0: the watch is off (every check says healthy).
  explicit HangWatch(Millis timeout = Millis(0));

  // A new attempt's ranks, all counted as progressing at `now`.
  void start(const std::vector<std::int32_t>& ranks, TimePoint now);
  // Off until the next start() (debug states, the job's end).
  void stop();
  bool watching() const { return watching_; }

  // A sample of `rank` at `now`. Unknown ranks are ignored.
  void observe(std::int32_t rank, const RankProgress& p, TimePoint now);

  // What changed at `now`, or nothing (progressing, or nothing new to say).
  // A suspect period begins when no rank made progress for the timeout and
  // begins again each further timeout while the silence lasts: each start
  // says `suspect` (the caller then collects the stacks and hands their
  // verdict to diagnosed()) or, on evidence that needs no stacks, `hung`.
  // At most one `hung` per period.
  std::optional<Verdict> check(TimePoint now);

  // The stacks of a suspect job at `now`: `outliers` the ranks outside the
  // dominant group (group_stacks; empty when no stack could be taken), `why`
  // how they differ. Hung when some but not all ranks stand apart, or when
  // every rank was idle for the timeout; else harmless, said once per
  // suspect period. Nothing when the job is no longer suspect.
  std::optional<Verdict> diagnosed(const std::vector<std::int32_t>& outliers,
                                   const std::string& why, TimePoint now);

  bool suspect() const { return suspect_since_.has_value(); }
  // How long since `rank` last made progress (its own lines or signals).
  std::optional<Millis> progress_age(std::int32_t rank, TimePoint now) const;
  Millis timeout() const { return timeout_; }

 private:
  struct Rank {
    RankProgress last;
    TimePoint progressed;   // its own last new line or signal
    TimePoint cpu_gained;   // its last sample with more CPU time than the one before
    TimePoint state_since;  // when its current state began
    bool sampled = false;   // a rank never sampled (simulated ranks) proves nothing
  };
  // Evidence that needs no stacks: stuck ranks (T/D held for half the
  // timeout) while others are not.
  std::optional<Verdict> stuck(TimePoint now) const;
  // Every rank idle (no CPU time gained) for the timeout.
  std::optional<Verdict> all_idle(TimePoint now) const;

  Millis timeout_;
  bool watching_ = false;
  std::map<std::int32_t, Rank> ranks_;
  TimePoint last_progress_{};               // any rank's
  std::optional<TimePoint> suspect_since_;  // the current suspect period's start
  bool hung_said_ = false;                  // in this suspect period
  bool harmless_said_ = false;              // in this suspect period
};

}  // namespace atl::supervisor
