// RankVitals: each rank's figures at a glance, for the operator's first
// question in an incident ("which rank is stuck or slow?"): the user's own
// process id (not atl's guard), how long since its last output line, its
// output lines/s and CPU% over the last window, its memory, and a mark when
// it stands apart from its peers — *silent* (no line for `silent_after`
// while most of its peers printed within it) or *slow* (under `slow_ratio`
// of the peers' median lines/s), or *straggler* (persistently computing far
// more than its peers' median CPU: in a synchronous job the others wait on
// it — what a slow step shows on the CPU when only rank 0 prints). A job
// whose ranks are all quiet marks none of those: that is the hang watch's to
// judge. What a rank's process tree *is* is marked the moment a sample says
// so, whatever its peers do: *stopped* (SIGSTOP, a debugger: 'T') at its
// first such sample, *uninterruptible* (in the kernel, usually I/O: 'D') once
// every sample for `stuck_after` said so (a healthy rank writing is in D for
// moments). Fed the samples the node
// agents take with their heartbeats (the hang watch's, so no extra /proc reads); plain C++, fed the
// time: tested in fake time.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "atl/core/duration.hpp"

namespace atl::supervisor {

struct VitalsSample {
  std::int32_t pid = 0;        // the rank's own process (the deepest of its tree)
  std::int64_t lines = 0;      // output lines so far (grows within an attempt)
  std::int64_t cpu_ticks = 0;  // its tree's CPU time so far (clock ticks)
  std::int64_t rss_bytes = 0;  // its tree's resident memory now
  char state = 'S';            // its tree's most telling state: T, D, R or S
};

enum class VitalsMark { none, silent, slow, straggler, stopped, uninterruptible };
const char* to_string(VitalsMark m);

struct RankFigures {
  std::int32_t pid = 0;
  Millis output_age{0};    // since its last line (or its first sample)
  double lines_per_s = 0;  // over the window; 0 until two samples
  double cpu_percent = 0;  // of one core, over the window
  std::int64_t rss_bytes = 0;
  VitalsMark mark = VitalsMark::none;
};

class RankVitals {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  struct Options {
    Millis silent_after = std::chrono::seconds(15);
    double slow_ratio = 1.0 / 3;
    // A median under this many lines/s marks nobody slow (a quiet job).
    double slow_floor = 0.5;
    Millis window = std::chrono::seconds(10);
    long ticks_per_second = 100;  // sysconf(_SC_CLK_TCK)
    // Straggler: CPU% at least straggler_ratio x the peers' median and
    // straggler_gap points above it, held for straggler_after.
    double straggler_ratio = 2.0;
    double straggler_gap = 25;
    Millis straggler_after = std::chrono::seconds(30);
    // Uninterruptible: in D in every sample for this long.
    Millis stuck_after = std::chrono::seconds(5);
  };

  RankVitals() = default;
  explicit RankVitals(Options options) : options_(options) {}

  // A new attempt: what was seen of the last one is dropped.
  void reset(std::int32_t attempt);
  std::int32_t attempt() const { return attempt_; }
  void observe(std::int32_t rank, const VitalsSample& s, TimePoint now);

  // Every rank sampled so far, with its mark among the rest.
  std::map<std::int32_t, RankFigures> figures(TimePoint now) const;
  // The figures of the moment of the ranks below `bound`, without the
  // marks that compare a rank with its peers (work for those ranks only:
  // the dashboard's trend, every 2 s, whatever the job's size).
  std::map<std::int32_t, RankFigures> own_figures(TimePoint now, std::int32_t bound) const;

  // Looks again at who computes far more than its peers (call it once per
  // round of samples); the ranks that just became stragglers, each with a
  // line for the job's events.
  std::vector<std::pair<std::int32_t, std::string>> update_stragglers(TimePoint now);
  // The ranks marked straggler now, ascending.
  std::vector<std::int32_t> stragglers(TimePoint now) const;

 private:
  struct Seen {
    std::deque<std::pair<TimePoint, VitalsSample>> samples;  // the window and one before
    TimePoint last_line{};
    std::optional<TimePoint> straggling_since;  // apart from its peers' CPU since
    std::optional<TimePoint> in_d_since;        // in D in every sample since
    bool said = false;                          // its straggling was said
  };
  bool straggles(const Seen& s, TimePoint now) const;
  RankFigures own(const Seen& s, TimePoint now) const;

  Options options_;
  std::int32_t attempt_ = 0;
  std::map<std::int32_t, Seen> ranks_;
};

}  // namespace atl::supervisor
