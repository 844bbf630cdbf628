// AttemptBook: every attempt of the job as a person asks after it — when
// it started, when it ended and how (a fault and which, atlctl stop then
// recover, the head's own restart, success, failure, cancel) — and the
// job's own times (submitted, started, ended). What the job page and
// status --json show; the restart budget's lines (RestartPolicy) name only
// the attempts a fault ended. Plain C++, fed the time (ms since the epoch);
// bounded to the newest kKept attempts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace atl::supervisor {

enum class AttemptEnd { running, fault, recovered, head_restart, succeeded, failed, cancelled };
const char* to_string(AttemptEnd how);

struct AttemptRecord {
  std::int32_t attempt = 0;
  std::int64_t started_ms = -1;  // -1: not known (an attempt of the head before a restart)
  std::int64_t ended_ms = -1;    // -1: still running
  AttemptEnd how = AttemptEnd::running;
  std::string detail;  // the fault's line, the failure; empty for a success
};

class AttemptBook {
 public:
  static constexpr std::size_t kKept = 1000;

  // The head took the job at `now` (submitted, or resumed after its restart).
  void submitted(std::int64_t now);
  // The head restarted while attempt `attempt` ran: it ended so, at `now`.
  void resumed_after(std::int32_t attempt, std::int64_t now);
  // Attempt `attempt`'s user code launched at `now`; the one before, if it
  // still runs, ended by `before` (a recover: the stopped attempt).
  void began(std::int32_t attempt, std::int64_t now, AttemptEnd before = AttemptEnd::recovered,
             const std::string& why = "");
  // The current attempt ended at `now`, `how`, and why (once: later words
  // about it change nothing).
  void ended(AttemptEnd how, const std::string& detail, std::int64_t now);
  // The job ended at `now` (the current attempt, if running, ended `how`).
  void job_ended(AttemptEnd how, const std::string& detail, std::int64_t now);

  const std::deque<AttemptRecord>& all() const { return attempts_; }
  std::optional<std::int64_t> submitted_ms() const { return submitted_; }
  std::optional<std::int64_t> started_ms() const { return started_; }
  std::optional<std::int64_t> ended_ms() const { return ended_; }

 private:
  AttemptRecord* running();
  std::deque<AttemptRecord> attempts_;
  std::optional<std::int64_t> submitted_, started_, ended_;
};

}  // namespace atl::supervisor
