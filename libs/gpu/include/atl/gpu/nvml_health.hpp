// Driver-side health of a GPU through NVML (uncorrected ECC errors, retired
// pages waiting for a reset), loaded at run time: a machine without the
// NVIDIA driver reports "not available" instead of failing to start.
#pragma once

#include <cstdint>
#include <string>

namespace atl::gpu {

struct NvmlHealth {
  bool available = false;
  std::string note;  // why not available, or the query that failed
  std::uint64_t ecc_uncorrected = 0;
  bool retired_pages_pending = false;
  bool ok() const { return !available || (ecc_uncorrected == 0 && !retired_pages_pending); }
};

NvmlHealth nvml_health(int device);

}  // namespace atl::gpu
