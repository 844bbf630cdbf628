// Goodput: how much of a job's time trained, and what each fault cost — the
// field's headline figure (Meta's effective training time, ByteRobust's
// goodput). An attempt trains from its first progress (a line, a signal) to
// its last; a fault that ends an attempt costs its *detection* (from the
// attempt's last progress to the verdict: a hang's silence, a crash's
// moments), its *restart* (to the next attempt's launch) and the next
// attempt's *re-warm* (to its first progress again). The first attempt's own
// warm-up is no fault's. Plain C++, fed the time (ms since the epoch).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace atl::supervisor {

class Goodput {
 public:
  // What one fault cost, ms; -1 while not known yet (the next attempt has
  // not launched, or not progressed).
  struct FaultCost {
    std::int32_t attempt = 0;  // the attempt the fault ended
    std::string reason;
    std::int64_t detection_ms = -1;
    std::int64_t restart_ms = -1;
    std::int64_t rewarm_ms = -1;
  };
  struct View {
    std::int64_t elapsed_ms = 0;     // since the first launch (to the end, once ended)
    std::int64_t productive_ms = 0;  // every attempt's first to last progress
    std::int64_t warmup_ms = -1;     // the first attempt's launch to its first progress
    std::int64_t detection_ms = 0;   // summed over the faults
    std::int64_t restart_ms = 0;
    std::int64_t rewarm_ms = 0;
    std::int64_t faults = 0;
    double ratio = 0;               // productive / elapsed (0 before the first launch)
    std::vector<FaultCost> recent;  // the latest faults, oldest first (at most kRecent)
  };
  static constexpr std::size_t kRecent = 20;

  // Attempt `attempt` launched at `now` (a relaunch of the same attempt,
  // after a debug stop, changes nothing).
  void launched(std::int32_t attempt, std::int64_t now);
  // Some rank of the current attempt made progress at `now`.
  void progress(std::int64_t now);
  // A fault ended the current attempt, found at `now`.
  void fault(const std::string& reason, std::int64_t now);
  // The job ended at `now`: the clock stops.
  void ended(std::int64_t now);

  View view(std::int64_t now) const;

 private:
  struct Attempt {
    std::int32_t number = 0;
    std::int64_t launched = 0;
    std::optional<std::int64_t> first, last;  // its progress
    bool faulted = false;
  };
  std::optional<std::int64_t> first_launch_;
  std::optional<std::int64_t> ended_;
  std::optional<Attempt> current_;
  std::int64_t productive_done_ = 0;  // of attempts that ended
  std::optional<std::int64_t> warmup_;
  std::int64_t faults_ = 0;
  std::int64_t detection_ = 0, restart_ = 0, rewarm_ = 0;
  std::deque<FaultCost> recent_;
  std::optional<std::int64_t> fault_at_;  // the last fault's verdict, until the next launch
  bool rewarm_pending_ = false;           // the current attempt follows a fault
};

}  // namespace atl::supervisor
