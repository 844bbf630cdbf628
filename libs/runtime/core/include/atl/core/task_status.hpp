// TaskStatus: a driver's task as the supervisor answers its start and each
// task_wait: where it runs, whether it started and ended, how, and the
// result it handed back. Plain data on the wire (its inspect() is in
// atl/actors/messages.hpp), so the C API reads fields instead of JSON.
#pragma once

#include <cstdint>
#include <string>

namespace atl {

struct TaskStatus {
  std::int32_t task = 0;  // 0: no task (a refusal's answer)
  std::string pod;
  std::int64_t group = 0;  // its placement group, 0: none
  std::int32_t bundle = -1;
  std::int32_t pid = 0;
  bool started = false;
  bool done = false;
  // Once done: how it ended; `error` when it could not start or its pod went.
  std::int32_t exit_code = 0;
  std::int32_t signal = 0;
  std::string error;
  bool has_result = false;  // it sent "result <text>" on its control channel
  std::string result;
  std::string result_error;  // why a result it sent was not kept
};

}  // namespace atl
