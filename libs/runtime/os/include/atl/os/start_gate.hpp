// The start gate: a local pod starts while its head is still starting.
//
// `headnode --local-workers` spawns its workernodes first thing, beside its
// own start-up (the credentials, the state store, the dashboard), instead of
// after it: a workernode spends ~6 ms loading its libraries and starting its
// actor system, which then overlaps the head's ~12 ms instead of following
// them (bench/results/launch.md). The pod is given the head's address
// (its port held by a PortReservation) and the read end of a pipe at fd 3,
// named by ATL_START_GATE_FD; it waits there before anything that needs the
// head (the job's TLS files may not exist yet, the port does not listen
// yet). The head writes one byte once it listens: the gate opens. The pipe
// closing without it (the head failed to start, or died) means the head is
// gone: the pod ends at once, quietly (the head said why it ended).
#pragma once

#include <chrono>
#include <optional>

#include "atl/core/expected.hpp"

namespace atl::os {

inline constexpr const char* kStartGateEnv = "ATL_START_GATE_FD";
inline constexpr int kStartGateFd = 3;  // where the pod finds it (SpawnRequest::control_fd)

// The head's side: the pipe. Closed with the object (a pod still waiting
// then hears that the head is gone).
class StartGate {
 public:
  static Expected<StartGate> make();
  StartGate(StartGate&& other) noexcept;
  StartGate& operator=(StartGate&& other) noexcept;
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;
  ~StartGate();

  // The end each pod is spawned with (its control_fd); -1 once closed.
  int pod_end() const { return pod_end_; }
  // Once every pod is spawned: this process keeps only its own end.
  void close_pod_end();
  // The head listens: every pod waiting goes on. Once; later calls do nothing.
  void open();

 private:
  StartGate() = default;
  int pod_end_ = -1;
  int head_end_ = -1;
};

// The descriptor ATL_START_GATE_FD names: a whole decimal number above 2
// (0-2 are stdio); anything else is no gate.
std::optional<int> parse_start_gate_fd(const char* text);

// This process's gate, if it was started behind one; the variable is
// removed, so that nothing this process starts (ranks) inherits it.
std::optional<int> take_start_gate();

enum class GateOutcome { open, head_gone, timed_out };

// Waits at the gate `fd` for at most `timeout`, then closes it.
GateOutcome wait_at_start_gate(int fd, std::chrono::milliseconds timeout);

}  // namespace atl::os
