// HangCourse: the hang watch's course over a job's attempts, in plain C++.
//
// It owns the HangWatch (one per attempt of spmd user code in command) and
// the ranks' vitals, and sequences what the watch decides: the pods' samples
// in, the verdict at each liveness tick, and for a suspect job the two looks
// at every rank's stacks a moment apart (a rank at work is caught at
// different places each time), whose grouping (core/stacks.hpp) and the
// ranks' flight records name the culprits. Its effects come back as data
// (HangEffects, in order) for the supervisor's shell to perform: take the
// stacks, arm the second look, keep a flight record, tell the controller
// (record, hung, straggler, progress). Each input takes `now`: the whole
// course runs in fake time in its tests.
//
// A look is a round (numbered, growing): an answer of an older round, a
// second look of an older attempt, or either once the job is no longer
// watched finds itself moot and does nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "atl/core/collectives.hpp"
#include "atl/core/orders.hpp"
#include "atl/core/process_messages.hpp"
#include "atl/core/stacks.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/hang_watch.hpp"
#include "atl/supervisor/rank_vitals.hpp"
#include "atl/supervisor/vitals_trend.hpp"

namespace atl::supervisor {

// What the course needs of the job at each input.
struct HangJob {
  // spmd user code in command: the only time the watch is on (stragglers too).
  bool spmd_command = false;
  Millis timeout{0};  // --hang-timeout (0: no hang watch, stragglers still)
  double factor = 4;  // --hang-factor
  std::int32_t attempt = 0;
  // The pod of each rank of this attempt (index: the rank).
  const std::vector<std::string>* rank_pods = nullptr;

  std::string pod_of(std::int32_t rank) const;
  std::int32_t world() const;
};

namespace hang {
// The controller's timeline: a line of kind "hang".
struct Record {
  std::string text;
};
// A line for the head's log (a warning when `warn`).
using supervisor::Say;
// Every pod of the attempt takes its ranks' stacks and answers with them
// (on_stacks with this round); `no_stop`: ranks seen computing, whose stacks
// are read only where that stops nothing.
struct TakeStacks {
  std::int32_t round = 0;
  std::vector<std::int32_t> no_stop;
};
// on_second_look(attempt) after `after`.
struct ArmSecondLook {
  std::int32_t attempt = 0;
  Millis after{0};
};
// A file of the attempt's log dir, written whole: a rank's raw flight record.
using KeepFile = sink_order::KeepFile;
// The job is hung: the culprits' pods (maybe none) and why.
struct Hung {
  std::vector<std::string> pods;
  std::string reason;
};
// A rank far behind the others (its pod, the line).
struct Straggler {
  std::string pod;
  std::string line;
};
// Some rank made progress (goodput's clock).
struct Progressed {};
}  // namespace hang

using HangEffect = std::variant<hang::Record, hang::Say, hang::TakeStacks, hang::ArmSecondLook,
                                hang::KeepFile, hang::Hung, hang::Straggler, hang::Progressed>;
using HangEffects = std::vector<HangEffect>;

class HangCourse {
 public:
  using TimePoint = HangWatch::TimePoint;

  // Between the two looks at a suspect job's stacks.
  static constexpr Millis kSecondLook{1000};

  // `ticks_per_second`: the clock ticks of the samples' CPU times (sysconf(_SC_CLK_TCK)).
  explicit HangCourse(long ticks_per_second = 100);

  // A pod's samples of its ranks: this attempt's ranks only, and only as
  // their own pod reports them.
  HangEffects on_progress(const std::string& pod, const std::vector<ProgressReport>& reports,
                          const HangJob& job, TimePoint now);
  // Each liveness tick: stragglers, the watch (re)started for a new attempt
  // or stopped outside command, its verdict.
  HangEffects on_tick(const HangJob& job, TimePoint now);
  // The stacks of look `round` (every pod answered, or failed to).
  HangEffects on_stacks(std::int32_t round, const std::vector<StackReport>& reports,
                        const HangJob& job, TimePoint now);
  // The second look's timer of `attempt`.
  HangEffects on_second_look(std::int32_t attempt, const HangJob& job, TimePoint now);

  const HangWatch& watch() const { return watch_; }
  const RankVitals& vitals() const { return vitals_; }
  const VitalsTrend& trend() const { return trend_; }
  // The look under way (0: none).
  std::int32_t looking() const { return looking_; }

 private:
  void act_on(const HangWatch::Verdict& verdict, const HangJob& job, TimePoint now,
              HangEffects& out);
  void look(const HangJob& job, TimePoint now, HangEffects& out);
  void forget_looks();

  long ticks_per_second_;
  HangWatch watch_;
  RankVitals vitals_;
  VitalsTrend trend_;                         // the vitals over time, a point per rank every 2 s
  std::int32_t watched_attempt_ = 0;          // the attempt the watch watches (0: none)
  std::int32_t looking_ = 0;                  // the round of the look under way (0: none)
  std::int32_t rounds_ = 0;                   // rounds so far: they only grow
  std::optional<StackDiagnosis> first_look_;  // this suspect period's first look
};

// The reports of `job`'s attempt's ranks, parsed and grouped; a rank waiting
// on its DataLoader names the worker that does not deliver; the ranks'
// flight records (into `records` when given) say who the others wait on.
StackDiagnosis group_stack_reports(const std::vector<StackReport>& reports, const HangJob& job,
                                   CollectiveDiagnosis* records = nullptr);

// A report's stack text parsed by its tool (py-spy or gdb).
std::vector<ThreadStack> parse_stack_report(const StackReport& report);

}  // namespace atl::supervisor
