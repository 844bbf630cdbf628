#include "atl/gpu/nvml_health.hpp"

#include <dlfcn.h>

namespace atl::gpu {

namespace {

// The few NVML entry points used, declared here: no header or link-time
// dependency on the driver. Values from nvml.h.
using nvmlDevice_t = void*;
constexpr int kNvmlSuccess = 0;
constexpr int kMemoryErrorUncorrected = 1;
constexpr int kVolatileEcc = 0;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleFn = int (*)(unsigned, nvmlDevice_t*);
using EccFn = int (*)(nvmlDevice_t, int, int, unsigned long long*);
using PendingFn = int (*)(nvmlDevice_t, int*);

}  // namespace

NvmlHealth nvml_health(int device) {
  NvmlHealth h;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    h.note = "NVML not available (no NVIDIA driver library)";
    return h;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
  auto handle = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto ecc = reinterpret_cast<EccFn>(dlsym(lib, "nvmlDeviceGetTotalEccErrors"));
  auto pending = reinterpret_cast<PendingFn>(dlsym(lib, "nvmlDeviceGetRetiredPagesPendingStatus"));
  if (!init || !shutdown || !handle) {
    h.note = "NVML library lacks its entry points";
  } else if (init() != kNvmlSuccess) {
    h.note = "NVML did not initialise";
  } else {
    nvmlDevice_t dev = nullptr;
    if (handle(static_cast<unsigned>(device), &dev) != kNvmlSuccess) {
      h.note = "NVML has no device " + std::to_string(device);
    } else {
      h.available = true;
      unsigned long long count = 0;
      // Devices without ECC answer "not supported": that is no error.
      if (ecc && ecc(dev, kMemoryErrorUncorrected, kVolatileEcc, &count) == kNvmlSuccess)
        h.ecc_uncorrected = count;
      int state = 0;
      if (pending && pending(dev, &state) == kNvmlSuccess) h.retired_pages_pending = state != 0;
    }
    shutdown();
  }
  dlclose(lib);
  return h;
}

}  // namespace atl::gpu
