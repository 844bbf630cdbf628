#include "atl/supervisor/liveness.hpp"

namespace atl::supervisor {

Liveness::Liveness(HeartbeatOptions heartbeat, Millis tick)
    : heartbeat_(heartbeat), tick_(tick), detector_(heartbeat.timeout) {}

Liveness::Tick Liveness::tick(TimePoint now) {
  Tick out;
  // A tick far later than due means the supervisor could not read its
  // mailbox: heartbeats that waited in it are not the pods' silence.
  if (last_tick_) {
    auto late = std::chrono::duration_cast<Millis>(now - *last_tick_ - tick_);
    if (late > heartbeat_.interval) detector_.excuse(late, now);
    if (late >= kStallWarning) out.stall = late;
  }
  last_tick_ = now;
  if (!last_sent_ || now - *last_sent_ >= heartbeat_.interval) {
    last_sent_ = now;
    out.send_heartbeats = true;
  }
  out.silent = detector_.expire(now);
  return out;
}

bool lost_a_gpu(const GpuCount& count) {
  return count.checked && count.present >= 0 && count.present < count.declared &&
         (!count.machine_tainted || count.runs_ranks);
}

bool gpu_fault_removes_pod(bool machine_tainted, bool runs_ranks) {
  return !machine_tainted || runs_ranks;
}

}  // namespace atl::supervisor
