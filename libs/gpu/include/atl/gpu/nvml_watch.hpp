// NVML, held open for as long as a pod lives, to look at its GPUs once a
// second for the faults GpuFaultWatch judges (gpu_watch.hpp): Xid and
// double-bit ECC events (nvmlDeviceRegisterEvents, drained without waiting),
// a GPU that answers NVML_ERROR_GPU_IS_LOST, the volatile uncorrected ECC
// count, row remaps pending or failed. NVML is dlopen()ed: a machine
// without the NVIDIA driver has no watcher, and says why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "atl/gpu/gpu_watch.hpp"

namespace atl::gpu {

class NvmlWatcher {
 public:
  // A watcher over every GPU NVML shows this pod (in a container: those it
  // was given), or nullptr with `why` set: no driver library, NVML would
  // not start, no GPU. `note` says what cannot be watched (events refused).
  static std::unique_ptr<NvmlWatcher> open(std::string& why);
  ~NvmlWatcher();
  NvmlWatcher(const NvmlWatcher&) = delete;
  NvmlWatcher& operator=(const NvmlWatcher&) = delete;

  // One look at every GPU: the events since the last look and the counts now.
  std::vector<GpuLook> look();

  std::size_t gpus() const;
  const std::string& note() const;

 private:
  struct Impl;
  explicit NvmlWatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace atl::gpu
