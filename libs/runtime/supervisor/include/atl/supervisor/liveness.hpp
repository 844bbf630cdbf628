// Liveness: whether the joined pods still answer. Owns the FailureDetector and
// the heartbeat cadence; the shell calls tick() on its liveness timer and
// performs what it returns (send the heartbeats, warn of its own stall, fence
// and lose the silent pods). The supervisor's own stalls (a mailbox thousands
// of reports deep, a paused process) are excused: its late timer is not the
// pods' silence. Plain C++, fed the time: tested in fake time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/duration.hpp"
#include "atl/core/failure_detector.hpp"

namespace atl::supervisor {

class Liveness {
 public:
  using Clock = FailureDetector::Clock;
  using TimePoint = FailureDetector::TimePoint;

  // The stall the supervisor warns of (it delayed every request as long).
  static constexpr Millis kStallWarning = std::chrono::seconds(1);

  explicit Liveness(HeartbeatOptions heartbeat = {}, Millis tick = std::chrono::milliseconds(100));

  // A pod joined (watched from `now`), left, or was heard from.
  void watch(const std::string& pod, TimePoint now) { detector_.watch(pod, now); }
  void forget(const std::string& pod) { detector_.forget(pod); }
  void heard(const std::string& pod, TimePoint now) { detector_.heard(pod, now); }
  std::optional<Millis> silence(const std::string& pod, TimePoint now) const {
    return detector_.silence(pod, now);
  }

  struct Tick {
    bool send_heartbeats = false;     // one heartbeat interval passed since the last
    std::optional<Millis> stall;      // this tick came so late (>= kStallWarning): say so
    std::vector<std::string> silent;  // pods silent past the timeout, oldest first, once each
  };
  // The timer fired at `now` (it is armed every tick_interval()).
  Tick tick(TimePoint now);

  Millis tick_interval() const { return tick_; }
  const HeartbeatOptions& heartbeat() const { return heartbeat_; }

 private:
  HeartbeatOptions heartbeat_;
  Millis tick_;
  FailureDetector detector_;
  std::optional<TimePoint> last_tick_;
  std::optional<TimePoint> last_sent_;
};

// A heartbeat counted a pod's GPUs: whether the pod lost one, and so is to
// leave (its machine tainted) rather than run on. Only once a pre-flight found
// them all (`checked`); a pod already on a tainted machine (recreated where a
// GPU went before) is quarantined, not removed again on every heartbeat,
// unless it runs ranks.
struct GpuCount {
  std::int32_t declared = 0;
  std::int32_t present = -1;  // -1: the pod cannot count them
  bool checked = false;
  bool machine_tainted = false;
  bool runs_ranks = false;
};
bool lost_a_gpu(const GpuCount& count);

// A pod's NVML watch reported a GPU fault: whether the pod is to leave (its
// machine tainted). In any state: a fatal Xid is seen once, and no check
// would find it again. Only a pod already on a tainted machine and running
// no ranks stays, quarantined.
bool gpu_fault_removes_pod(bool machine_tainted, bool runs_ranks);

}  // namespace atl::supervisor
