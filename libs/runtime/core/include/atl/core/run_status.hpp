// RunStatus: a debug run (atlctl run, check, burn) as the supervisor answers
// its start and each run_wait: each rank's pod, pid and end. Plain data on
// the wire (its inspect() is in atl/actors/messages.hpp), so atlctl reads
// fields instead of parsing JSON out of a reply's text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl {

struct RunRankStatus {
  std::int32_t rank = 0;
  std::string pod;
  std::int32_t pid = 0;
  bool started = false;
  bool done = false;
  std::int32_t code = 0;
  std::int32_t signal = 0;
  std::string error;  // it could not start, or its pod was lost

  // Why the rank failed, or "" when it succeeded or has not ended.
  std::string failure() const {
    if (!done) return "";
    if (!error.empty()) return "could not run: " + error;
    if (signal != 0) return "killed by signal " + std::to_string(signal);
    if (code != 0) return "exit code " + std::to_string(code);
    return "";
  }
};

struct RunStatus {
  std::int32_t run = 0;  // 0: no run (a refusal's answer)
  bool done = false;     // every rank ended
  bool tracked = false;  // it holds the job in debugCommand (no -f)
  std::vector<RunRankStatus> ranks;
  std::string deadline;  // set when it was stopped at its deadline: why
};

}  // namespace atl
