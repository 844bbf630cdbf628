// Driver-side health of a GPU through NVML (uncorrected ECC errors, retired
// pages waiting for a reset, Xid events raised while a check runs), loaded at
// run time: a machine without the NVIDIA driver reports "not available"
// instead of failing to start.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace atl::gpu {

struct NvmlHealth {
  bool available = false;
  std::string note;  // why not available, or what could not be watched
  std::uint64_t ecc_uncorrected = 0;
  bool retired_pages_pending = false;
  bool xids_watched = false;  // NVML accepted the Xid event registration
  std::vector<int> xids;      // Xid events raised while the work ran
  bool ok() const;            // no ECC errors, no pending pages, no critical Xid
};

// The GPU at PCI address `pci_bus_id` (CUDA's cudaDeviceGetPCIBusId form,
// "0000:3B:00.0": NVML's and CUDA's device indices need not agree). Xid
// events are watched while `work` runs (when given).
NvmlHealth nvml_health(const std::string& pci_bus_id, const std::function<void()>& work = {});

}  // namespace atl::gpu
