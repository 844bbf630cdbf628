// The GPU fault watch of a running pod: what NVML says of each of the pod's
// GPUs, looked at once a second, turned into the faults that make a node
// unusable (the guide's "delete the node that lost its GPU", done when it
// happens instead of when a person notices the job stuck).
//
// GpuFaultWatch is the judgement, pure and tested from recorded looks; the
// looks come from NvmlWatcher (nvml_watch.hpp) on a pod, from a fake NVML
// library in the tests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "atl/gpu/nvml_health.hpp"

namespace atl::gpu {

// One look at one GPU. A value NVML could not give is empty.
struct GpuLook {
  unsigned index = 0;                            // NVML's index on this pod
  std::string device;                            // its UUID ("GPU-5f3c..."), or "" when unreadable
  bool lost = false;                             // a call answered NVML_ERROR_GPU_IS_LOST
  std::vector<int> xids;                         // Xid events delivered since the last look
  int double_bit_events = 0;                     // double-bit ECC events since the last look
  std::optional<std::uint64_t> ecc_uncorrected;  // volatile count since the driver loaded
  std::optional<RemappedRows> remapped;
};

// A GPU that cannot be trusted any more: its node is to be tainted and left.
struct GpuFault {
  unsigned index = 0;
  std::string device;
  int xid = 0;         // the Xid that said so, or 0
  std::string reason;  // one line: "GPU 1 (GPU-5f3c...): Xid 79, GPU has fallen off the bus"
};

// A GPU event worth a line in the node's log that is no fault of the node's
// (a non-critical Xid: 31, the program's bad address; 43, a killed context).
struct GpuNote {
  unsigned index = 0;
  std::string text;
};

struct GpuVerdict {
  std::vector<GpuFault> faults;  // new ones: each GPU's first fault, once
  std::vector<GpuNote> notes;
};

class GpuFaultWatch {
 public:
  // Folds one look at the pod's GPUs. The first look at a GPU sets the
  // baseline of its ECC count (errors from before the watch are the
  // pre-flight check's to judge); a pending or failed row remap, a lost GPU,
  // a critical Xid or a double-bit ECC error is a fault whenever it is seen.
  GpuVerdict observe(const std::vector<GpuLook>& looks);

  // Whether a fault of GPU `index` was reported.
  bool faulted(unsigned index) const;

 private:
  struct Seen {
    std::optional<std::uint64_t> ecc_baseline;
    bool faulted = false;
  };
  std::map<unsigned, Seen> seen_;
};

}  // namespace atl::gpu
