// HangWatch: whether a training job whose processes all live has stopped
// making progress, and on what evidence. Fed each rank's progress samples
// (the node agents sample them with their heartbeats: output lines, explicit
// progress signals, CPU time, I/O and process state of the rank's tree) and,
// when it asks, a diagnosis of the ranks' stacks.
//
// Each rank is *working* (its tree gained CPU time or moved bytes over the
// last few seconds) or *idle* (blocked, asleep, stopped, `D` with no I/O).
// Two clocks:
// - the idle timeout: once the job made steps, k x the p99 of the gaps
//   between its progress (with a floor), else the configured timeout. A job
//   silent that long whose ranks are all idle is *suspect*;
// - the configured timeout (the user's bound on the longest step, evaluation
//   or checkpoint): a job silent that long is suspect whatever its ranks do.
// A suspect job is *hung* only on evidence — ranks stopped (T) or in `D` with
// no I/O while their peers are not (seen at once), or, once the stacks are
// in, ranks whose stacks stand apart from the rest (idle, or working past the
// configured timeout: *busy*), else, at the configured timeout, every rank
// idle or some working while the rest wait (no one named before it: ranks
// may all wait on purpose).
// A rank that works while the others wait on it (rank 0 evaluating or
// checkpointing alone) is never judged before the configured timeout. A job
// silent by design whose ranks keep computing alike stays suspect, said once
// per timeout, never acted on. Plain C++, fed the time: tested in fake time.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
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
  std::int64_t io_bytes = 0;  // bytes its tree read and wrote so far
};

class HangWatch {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  struct Options {
    // The configured timeout (0: the watch is off).
    Millis timeout{0};
    // The learned idle timeout: factor x p99 of the gaps between progress,
    // at least `floor`, never more than `timeout`, once `min_gaps` were seen.
    double factor = 4;
    Millis floor = std::chrono::seconds(10);
    std::size_t min_gaps = 5;
    // Working: over the last `window`, CPU time of at least `busy_cpu` of
    // one core, or at least `busy_io` bytes read or written.
    Millis window = std::chrono::seconds(3);
    double busy_cpu = 0.01;
    std::int64_t busy_io = 64 << 10;
    // While the job is suspect its ranks are looked at (py-spy, the flight
    // recorder's dump: a few ms of a rank's CPU, its record's bytes): each
    // rank is judged as it was when the suspect period began, and work
    // since then counts only past what a look can cost (a tenth of a core,
    // 1 MiB over the window, where a look costs a few ms and a record of at
    // most a few hundred KiB: an evaluation or a checkpoint is more).
    double look_cpu = 0.10;
    std::int64_t look_io = 1 << 20;
    long ticks_per_second = 100;  // sysconf(_SC_CLK_TCK)
  };

  struct Verdict {
    enum class Kind {
      suspect,    // silent for the timeout: diagnose the stacks (diagnosed() decides)
      hung,       // evidence: act on it (culprits may be empty: every rank idle)
      harmless,   // suspect, but ranks work and none stands apart past its time: no action
      recovered,  // progress again after a suspect period
    };
    Kind kind = Kind::suspect;
    std::vector<std::int32_t> culprits;  // ranks to blame, ascending
    std::string reason;                  // one line: what was seen
  };

  // `timeout` 0: the watch is off (every check says healthy).
  explicit HangWatch(Millis timeout = Millis(0));
  explicit HangWatch(Options options);

  // A new attempt's ranks, all counted as progressing at `now`.
  void start(const std::vector<std::int32_t>& ranks, TimePoint now);
  // Off until the next start() (debug states, the job's end).
  void stop();
  bool watching() const { return watching_; }

  // A sample of `rank` at `now`; true when it made progress (a new line or
  // signal). Unknown ranks are ignored.
  bool observe(std::int32_t rank, const RankProgress& p, TimePoint now);

  // What changed at `now`, or nothing (progressing, or nothing new to say).
  // A suspect period begins when no rank made progress for the idle timeout
  // while every rank is idle, or for the configured timeout, and begins
  // again each further such timeout while the silence lasts: each start says
  // `suspect` (the caller then collects the stacks and hands their verdict
  // to diagnosed()) or, on evidence that needs no stacks, `hung`. At most one
  // `hung` per period.
  std::optional<Verdict> check(TimePoint now);

  // The stacks of a suspect job at `now`: `outliers` the ranks outside the
  // dominant group (group_stacks; empty when no stack could be taken), `why`
  // how they differ. Hung when some but not all ranks stand apart and those
  // are idle or have worked past the configured timeout; at the configured
  // timeout also when ranks work while the rest wait, or every rank was
  // idle, and under a learned cadence also when every rank is idle and no
  // one stands apart; else harmless, said once per suspect period (a job
  // idle but for a moment's work, whose stacks named no one, is looked at
  // again only at the configured timeout).
  // Nothing when the job is no longer suspect.
  std::optional<Verdict> diagnosed(const std::vector<std::int32_t>& outliers,
                                   const std::string& why, TimePoint now);

  bool suspect() const { return suspect_since_.has_value(); }
  // How long since `rank` last made progress (its own lines or signals).
  std::optional<Millis> progress_age(std::int32_t rank, TimePoint now) const;
  Millis timeout() const { return options_.timeout; }
  // The silence after which an all-idle job is suspect now.
  Millis idle_timeout() const;
  // Whether the idle timeout comes from the job's own cadence, and that
  // cadence (the p99 gap between progress).
  bool learned() const;
  Millis step_p99() const;
  // The idle timeout when it has changed by a quarter or more since it was
  // last asked for (the first learned one included): for the job's events.
  std::optional<Millis> idle_timeout_news();
  // Whether `rank` worked over the window before `now`.
  bool working(std::int32_t rank, TimePoint now) const;
  // Each of `ranks`' evidence at `now`, one phrase each joined by "; ":
  // "rank 1: S, CPU 0%, I/O 0 B/s, no progress for 12 s".
  std::string evidence(const std::vector<std::int32_t>& ranks, TimePoint now) const;

 private:
  struct Sample {
    TimePoint at;
    std::int64_t cpu_ticks;
    std::int64_t io_bytes;
  };
  struct Rank {
    RankProgress last;
    TimePoint progressed;       // its own last new line or signal
    TimePoint worked;           // its last sample that found it working
    TimePoint state_since;      // when its current state began
    std::deque<Sample> window;  // the window's samples and one before
    bool sampled = false;       // a rank never sampled (simulated ranks) proves nothing
    // As it was when the current suspect period began (before any look).
    bool was_working = false;
    TimePoint worked_before{};
  };
  // Whether its window gained `cpu` of a core or moved `io` bytes; nothing
  // while its samples span less than half the window.
  std::optional<bool> past(const Rank& r, double cpu, std::int64_t io) const;
  bool working(const Rank& r, TimePoint now) const;
  // Working as a verdict may count it: outside a suspect period, working();
  // inside, as it was when the period began, or working now past what a
  // look can cost.
  bool judged_working(const Rank& r, TimePoint now) const;
  // When it last worked, as a verdict may count it (see judged_working).
  TimePoint judged_worked(const Rank& r, TimePoint now) const;
  // A suspect period begins at `now`: each rank as it is, before the looks.
  void begin_suspect(TimePoint now, bool long_silent);
  double cpu_share(const Rank& r) const;  // of one core, over the window
  double io_per_second(const Rank& r) const;
  bool every_rank_idle_now(TimePoint now) const;
  // Idle with a margin: its window below half the working bar in CPU, and
  // no more I/O than a look costs (a rank near the bar is neither side).
  bool plainly_idle(const Rank& r) const;
  // Evidence that needs no stacks: stuck ranks (T, or D without I/O, held
  // for half the idle timeout) while others are not.
  std::optional<Verdict> stuck(TimePoint now) const;
  // Every rank idle for the idle timeout.
  std::optional<Verdict> all_idle(TimePoint now) const;
  // Ranks working past the configured timeout while the others wait,
  // plainly idle (see plainly_idle) then and now.
  std::optional<Verdict> busy(TimePoint now) const;

  Options options_;
  bool watching_ = false;
  std::map<std::int32_t, Rank> ranks_;
  TimePoint started_{};
  TimePoint last_progress_{};  // any rank's
  bool progressed_ = false;    // since start: the first gap (start-up) is no step
  std::deque<Millis> gaps_;    // between the job's progress, the newest last
  Millis idle_timeout_said_{0};
  std::optional<TimePoint> suspect_since_;  // the current suspect period's start
  bool suspect_long_ = false;               // it began at the configured timeout
  bool hung_said_ = false;                  // in this suspect period
  bool harmless_said_ = false;              // in this suspect period
  bool idle_looked_ = false;                // this silence's all-idle stacks named no one
};

}  // namespace atl::supervisor
