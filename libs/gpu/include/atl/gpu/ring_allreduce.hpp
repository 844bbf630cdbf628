// A ring allreduce over TCP between the burn processes of several nodes: the
// CPU path of the allreduce burns and checks (real sockets, real bytes), with
// nccl-tests' figures and an exact check of every element.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/core/host_port.hpp"
#include "atl/gpu/device_math.hpp"

namespace atl::gpu {

struct RingConfig {
  int index = 0;                             // this process's place in the ring
  std::vector<HostPort> peers;               // every member, in ring order (peers[index] is us)
  std::chrono::milliseconds timeout{30000};  // connect, and any wait for a peer's bytes
  int listen_fd = -1;  // a listener from listen_for_ring (the ring owns it); -1: bind peers[index]
};

// A listening TCP socket on every interface, on `port` (0: any free one):
// bound before the rendezvous, so the member can tell its port.
struct RingListener {
  int fd = -1;
  int port = 0;
};
Expected<RingListener> listen_for_ring(int port = 0);

struct AllreduceRound {
  std::int64_t bytes = 0;
  double seconds = 0;
  std::int64_t wrong = 0;  // elements that are not the exact sum
};

class TcpRing {
 public:
  // Listens on peers[index], connects to the next member, accepts the
  // previous one. The error names the peer that could not be reached.
  static Expected<std::unique_ptr<TcpRing>> connect(const RingConfig& config);
  ~TcpRing();

  int size() const { return static_cast<int>(config_.peers.size()); }
  int index() const { return config_.index; }

  // Sums `bytes` of integer-valued floats over the ring (reduce-scatter, then
  // all-gather) and checks every element against the exact sum. A lost or
  // silent peer is an error, never a hang.
  Expected<AllreduceRound> allreduce(std::int64_t bytes, int round);

  // Member 0's word (e.g. "another round?") passed once around the ring, so
  // every member stops after the same round.
  Expected<bool> agree(bool decision_of_member_0);

 private:
  explicit TcpRing(RingConfig config) : config_(std::move(config)) {}
  Status send_all(const void* data, size_t size);
  Status recv_all(void* data, size_t size);

  RingConfig config_;
  int listen_fd_ = -1, next_fd_ = -1, prev_fd_ = -1;
};

}  // namespace atl::gpu
