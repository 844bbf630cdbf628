#include "atl/gpu/nvml_health.hpp"

#include <dlfcn.h>

#include "atl/gpu/xid.hpp"

namespace atl::gpu {

namespace {

// The few NVML entry points used, declared here: no header or link-time
// dependency on the driver. Values and layouts from nvml.h.
using nvmlDevice_t = void*;
using nvmlEventSet_t = void*;
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid, for Xid events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr int kNvmlSuccess = 0;
constexpr int kMemoryErrorUncorrected = 1;
constexpr int kVolatileEcc = 0;
constexpr unsigned long long kEventXid = 0x8;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleFn = int (*)(const char*, nvmlDevice_t*);
using EccFn = int (*)(nvmlDevice_t, int, int, unsigned long long*);
using PendingFn = int (*)(nvmlDevice_t, int*);
using SetCreateFn = int (*)(nvmlEventSet_t*);
using RegisterFn = int (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using WaitFn = int (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using SetFreeFn = int (*)(nvmlEventSet_t);

template <class Fn>
Fn entry(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

bool NvmlHealth::ok() const {
  for (int xid : xids)
    if (xid_is_critical(xid)) return false;
  return !available || (ecc_uncorrected == 0 && !retired_pages_pending);
}

NvmlHealth nvml_health(const std::string& pci_bus_id, const std::function<void()>& work) {
  NvmlHealth h;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    h.note = "NVML not available (no NVIDIA driver library)";
    if (work) work();
    return h;
  }
  auto init = entry<InitFn>(lib, "nvmlInit_v2");
  auto shutdown = entry<ShutdownFn>(lib, "nvmlShutdown");
  auto handle = entry<HandleFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  auto ecc = entry<EccFn>(lib, "nvmlDeviceGetTotalEccErrors");
  auto pending = entry<PendingFn>(lib, "nvmlDeviceGetRetiredPagesPendingStatus");
  auto set_create = entry<SetCreateFn>(lib, "nvmlEventSetCreate");
  auto register_events = entry<RegisterFn>(lib, "nvmlDeviceRegisterEvents");
  auto wait = entry<WaitFn>(lib, "nvmlEventSetWait_v2");
  auto set_free = entry<SetFreeFn>(lib, "nvmlEventSetFree");
  nvmlDevice_t dev = nullptr;
  if (!init || !shutdown || !handle) {
    h.note = "NVML library lacks its entry points";
  } else if (init() != kNvmlSuccess) {
    h.note = "NVML did not initialise";
    shutdown = nullptr;
  } else if (handle(pci_bus_id.c_str(), &dev) != kNvmlSuccess) {
    h.note = "NVML has no device at PCI " + pci_bus_id;
  } else {
    h.available = true;
  }
  nvmlEventSet_t set = nullptr;
  if (h.available && set_create && register_events && wait && set_free &&
      set_create(&set) == kNvmlSuccess) {
    // Unsupported on some boards and inside some containers: then only the
    // kernel log speaks of Xids.
    h.xids_watched = register_events(dev, kEventXid, set) == kNvmlSuccess;
    if (!h.xids_watched) h.note = "NVML does not deliver Xid events here";
  }
  if (work) work();
  if (h.xids_watched) {
    nvmlEventData_t data{};
    while (wait(set, &data, 1) == kNvmlSuccess) {
      if (data.eventType == kEventXid) h.xids.push_back(static_cast<int>(data.eventData));
    }
  }
  if (set) set_free(set);
  if (h.available) {
    unsigned long long count = 0;
    // Devices without ECC answer "not supported": that is no error.
    if (ecc && ecc(dev, kMemoryErrorUncorrected, kVolatileEcc, &count) == kNvmlSuccess)
      h.ecc_uncorrected = count;
    int state = 0;
    if (pending && pending(dev, &state) == kNvmlSuccess) h.retired_pages_pending = state != 0;
  }
  if (shutdown) shutdown();
  dlclose(lib);
  return h;
}

}  // namespace atl::gpu
