// The start gate: a local pod starts while its head is still starting, and
// the gate is then its line to the head.
//
// `headnode --local-workers` spawns its workernodes first thing, beside its
// own start-up (the credentials, the state store, the dashboard), instead of
// after it: a workernode spends ~6 ms loading its libraries and starting its
// actor system, which then overlaps the head's ~12 ms instead of following
// them (bench/results/launch.md). Each pod is given the head's address (its
// port held by a PortReservation) and its end of a Unix socket pair of its
// own at fd 3, named by ATL_START_GATE_FD; it waits there before anything
// that needs the head (the job's TLS files may not exist yet, the port does
// not listen yet). The head writes one byte to each pod once it listens: the
// gate opens. The socket closing without it (the head failed to start, or
// died) means the head is gone: the pod ends at once, quietly (the head said
// why it ended).
//
// Past the byte, the pair is the pod's first connection to the head
// (actors/pod_line.hpp): BASP runs over it as over TCP, without TLS's
// handshakes, since nobody else can reach a socket pair its two ends were
// born with (a pod is the head's fork). A pod that loses it rejoins over TCP
// and TLS as any pod does.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

inline constexpr const char* kStartGateEnv = "ATL_START_GATE_FD";
inline constexpr int kStartGateFd = 3;  // where the pod finds it (SpawnRequest::control_fd)

// The head's side: a socket pair per pod. Every end still held is closed
// with the object (a pod still waiting then hears that the head is gone).
class StartGate {
 public:
  static Expected<StartGate> make(std::size_t pods);
  StartGate(StartGate&& other) noexcept;
  StartGate& operator=(StartGate&& other) noexcept;
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;
  ~StartGate();

  std::size_t pods() const { return head_ends_.size(); }
  // The end pod `i` is spawned with (its control_fd); -1 once closed.
  int pod_end(std::size_t i) const { return i < pod_ends_.size() ? pod_ends_[i] : -1; }
  // Once every pod is spawned: this process keeps only its own ends.
  void close_pod_ends();
  // The head listens: every pod waiting goes on. Once; later calls do nothing.
  void open();
  // After open: the head's ends, one per pod in order (-1 for a pod that
  // is gone), now the caller's: each pod's line (actors/pod_line.hpp).
  // Empty before open or once taken.
  std::vector<int> take_lines();

 private:
  StartGate() = default;
  void close_all();
  std::vector<int> pod_ends_;
  std::vector<int> head_ends_;
  bool opened_ = false;
};

// The descriptor ATL_START_GATE_FD names: a whole decimal number above 2
// (0-2 are stdio); anything else is no gate.
std::optional<int> parse_start_gate_fd(const char* text);

// This process's gate, if it was started behind one; the variable is
// removed, so that nothing this process starts (ranks) inherits it.
std::optional<int> take_start_gate();

enum class GateOutcome { open, head_gone, timed_out };

// Waits at the gate `fd` for at most `timeout`. Open: the gate's byte is
// taken and `fd` stays open, the pod's line to its head (the caller's to
// close); otherwise `fd` is closed.
GateOutcome wait_at_start_gate(int fd, std::chrono::milliseconds timeout);

}  // namespace atl::os
