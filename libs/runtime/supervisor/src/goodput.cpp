#include "atl/supervisor/goodput.hpp"

namespace atl::supervisor {

void Goodput::launched(std::int32_t attempt, std::int64_t now) {
  if (current_ && current_->number == attempt) return;
  if (current_ && !current_->faulted && current_->first)
    productive_done_ += *current_->last - *current_->first;  // replaced without a fault
  if (!first_launch_) first_launch_ = now;
  rewarm_pending_ = false;
  if (fault_at_) {
    const std::int64_t cost = now - *fault_at_;
    restart_ += cost;
    if (!recent_.empty()) recent_.back().restart_ms = cost;
    fault_at_.reset();
    rewarm_pending_ = true;
  }
  current_ = Attempt{attempt, now, std::nullopt, std::nullopt, false};
}

void Goodput::progress(std::int64_t now) {
  if (!current_ || current_->faulted || ended_) return;
  if (!current_->first) {
    current_->first = now;
    const std::int64_t warm = now - current_->launched;
    if (rewarm_pending_) {
      rewarm_ += warm;
      if (!recent_.empty()) recent_.back().rewarm_ms = warm;
      rewarm_pending_ = false;
    } else if (!warmup_) {
      warmup_ = warm;
    }
  }
  current_->last = now;
}

void Goodput::fault(const std::string& reason, std::int64_t now) {
  // Before any launch, or while the last fault's restart is under way: no
  // attempt of user code for it to end.
  if (!current_ || current_->faulted || ended_) return;
  current_->faulted = true;
  if (current_->first) productive_done_ += *current_->last - *current_->first;
  const std::int64_t detection = now - current_->last.value_or(current_->launched);
  detection_ += detection;
  ++faults_;
  fault_at_ = now;
  rewarm_pending_ = false;
  recent_.push_back({current_->number, reason, detection, -1, -1});
  if (recent_.size() > kRecent) recent_.pop_front();
}

void Goodput::ended(std::int64_t now) {
  if (!ended_) ended_ = now;
}

Goodput::View Goodput::view(std::int64_t now) const {
  View v;
  if (!first_launch_) return v;
  v.elapsed_ms = ended_.value_or(now) - *first_launch_;
  v.productive_ms = productive_done_;
  if (current_ && !current_->faulted && current_->first)
    v.productive_ms += *current_->last - *current_->first;
  v.warmup_ms = warmup_.value_or(-1);
  v.detection_ms = detection_;
  v.restart_ms = restart_;
  v.rewarm_ms = rewarm_;
  v.faults = faults_;
  v.ratio = v.elapsed_ms > 0 ? static_cast<double>(v.productive_ms) / v.elapsed_ms : 0;
  v.recent.assign(recent_.begin(), recent_.end());
  return v;
}

}  // namespace atl::supervisor
