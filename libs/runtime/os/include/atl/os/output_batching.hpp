// OutputBatching: when a rank's whole lines go to the head at once and when
// they wait for more. A line that comes after a quiet spell goes at once (a
// training loop's print reaches the head without delay); output that comes
// faster than that is gathered into chunks of up to `chunk_bytes`, held at
// most `hold` — every chunk costs a message, its ack and a wake of each thread
// on the way (pump, both multiplexers, the sink, the file writer), so a fast
// writer's output in 256 KB chunks is a few hundred of those a second, not
// thousands. Pure (fake time in its tests); the output pump asks it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>

namespace atl::os {

class OutputBatching {
 public:
  using Clock = std::chrono::steady_clock;
  using Duration = std::chrono::microseconds;

  struct Options {
    std::size_t chunk_bytes = 256 * 1024;
    Duration quiet{2000};  // lines this long after the last chunk went go at once
    Duration pause{200};   // how long a held chunk waits for more before looking again
    Duration hold{5000};   // the longest a line is held
  };

  explicit OutputBatching(Options options) : options_(options) {}

  // `complete` bytes of whole lines wait (fewer than a chunk's): true if they
  // should wait for more; from the first such answer they are held.
  bool hold(Clock::time_point now, std::size_t complete) {
    if (complete == 0 || complete >= options_.chunk_bytes) return false;
    if (held_since_) return now - *held_since_ < options_.hold;
    if (!last_delivery_ || now - *last_delivery_ >= options_.quiet) return false;
    held_since_ = now;
    return true;
  }

  bool holding() const { return held_since_.has_value(); }

  // How long a held chunk waits before the pump looks for more (never past
  // its hold).
  Duration pause(Clock::time_point now) const {
    if (!held_since_) return Duration::zero();
    const auto left = std::chrono::duration_cast<Duration>(*held_since_ + options_.hold - now);
    return std::clamp(left, Duration::zero(), options_.pause);
  }

  // A chunk went to the sink.
  void delivered(Clock::time_point now) {
    last_delivery_ = now;
    held_since_.reset();
  }

 private:
  Options options_;
  std::optional<Clock::time_point> last_delivery_;
  std::optional<Clock::time_point> held_since_;
};

}  // namespace atl::os
