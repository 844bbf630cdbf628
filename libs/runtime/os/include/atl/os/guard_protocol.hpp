// What ChildProcess::spawn and the `atl-guard` executable agree on: how the
// guard is started and how it is told things. Header-only and libc-only: the
// guard is a small static program that links nothing of atl's.
//
//   atl-guard <parent pid> <lease timeout ms, 0: none> -- <command> [args...]
//
// Descriptors at its start: 0 /dev/null, 1 and 2 the command's output, 3 the
// command's control channel (when it has one), kGuardReportFd the report pipe
// (two ints, step and errno, when the start failed; closed on exec of the
// command), kGuardLeaseFd the node's lease (a memfd holding one int64
// nanosecond stamp, when it has one). Its environment is the command's.
#pragma once

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>

namespace atl::os {

inline constexpr int kGuardReportFd = 4;
inline constexpr int kGuardLeaseFd = 5;
inline constexpr const char* kGuardBinary = "atl-guard";

// Steps a failed start reports (the first int on the report pipe).
enum GuardStep : int {
  kStepOutput = 1,  // redirect output
  kStepChdir = 2,   // change to the working directory
  kStepExec = 3,    // exec the command
  kStepFork = 4,    // start the command's process
  kStepGuard = 5,   // start the guard itself
  kStepArgs = 6,    // the guard's arguments
};

// The owner's "kill everything below you now" (the guard's sweep).
inline constexpr int kKillTreeSignal = SIGUSR2;
// The guard's pdeathsig: the node agent died, nothing of the rank may outlive it.
inline constexpr int kParentDiedSignal = SIGUSR1;

inline std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// Whether a lease last stamped at `stamp` has run out after `timeout_ms`.
inline bool lease_expired(const std::atomic<std::int64_t>& stamp, std::int64_t timeout_ms) {
  return monotonic_ns() - stamp.load(std::memory_order_relaxed) > timeout_ms * 1000000;
}

}  // namespace atl::os
