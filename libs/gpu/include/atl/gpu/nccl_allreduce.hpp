// Allreduce over NCCL: one communicator rank per local GPU, created
// non-blocking and watched (ncclCommGetAsyncError polled; ncclCommAbort on an
// error or when a deadline passes), so a dead or silent peer ends the burn
// with an error naming what happened instead of hanging it. Inputs are
// integer-valued floats filled and verified on the GPUs (device_math.hpp):
// every element of every round is checked against the exact sum.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/gpu/ring_allreduce.hpp"

namespace atl::gpu {

struct NcclSetup {
  // Hex of the ncclUniqueId from member 0 (nccl_make_unique_id). Empty: this
  // process holds every rank (a node's local allreduce) and makes its own.
  std::string unique_id;
  int world = 0;             // ranks in all; 0: devices.size()
  int first_rank = 0;        // this process's ranks are first_rank.. in device order
  std::vector<int> devices;  // CUDA devices, one rank each
  std::chrono::milliseconds timeout{60000};  // the watchdog: init, and each collective
};

// How one size is measured, as nccl-tests does: `warmup` untimed
// collectives, then `iterations` back to back between one pair of events
// per GPU (no host sleep inside: the enqueue waits spin); the time per
// collective is the window over the iterations, averaged over the local
// GPUs. Out of place (send and receive buffers apart: the receive buffer is
// the sum after every iteration, checked after the window) or in place
// (one buffer: the window's sums compound, so it is filled anew and reduced
// once more for the check).
struct AllreduceOptions {
  int warmup = 5;
  int iterations = 20;
  bool in_place = true;
};

class NcclAllreduce {
 public:
  static Expected<std::unique_ptr<NcclAllreduce>> create(const NcclSetup& setup);
  virtual ~NcclAllreduce() = default;  // healthy: finalize and destroy; broken: abort

  virtual int world() const = 0;
  // A sum of `bytes` of floats on every local GPU at once, measured as
  // `options` say: seconds per collective (CUDA events, averaged over the
  // local GPUs); wrong = elements off the exact sum.
  virtual Expected<AllreduceRound> allreduce(std::int64_t bytes, int round,
                                             const AllreduceOptions& options = {}) = 0;
  // Rank 0's word passed to every rank (a one-float allreduce): "another round?"
  virtual Expected<bool> agree(bool decision_of_rank_0) = 0;
};

bool nccl_compiled_in();
// A fresh ncclUniqueId, hex. The calling process hosts NCCL's bootstrap root:
// it must stay alive (and create its communicator) while the others join.
Expected<std::string> nccl_make_unique_id();
// The least free memory over `devices`, in bytes (0 when it cannot be read).
std::int64_t least_free_device_memory(const std::vector<int>& devices);

}  // namespace atl::gpu
