#include "atl/gpu/nvml_watch.hpp"

#include <cstdlib>

#include "nvml_api.hpp"

namespace atl::gpu {

std::string nvml::library_path() {
  const char* path = std::getenv("ATL_NVML_LIBRARY");
  return path && *path ? path : "libnvidia-ml.so.1";
}

struct NvmlWatcher::Impl {
  void* lib = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::UuidFn uuid = nullptr;
  nvml::EccFn ecc = nullptr;
  nvml::RemappedFn remapped = nullptr;
  nvml::WaitFn wait = nullptr;
  nvml::SetFreeFn set_free = nullptr;
  nvml::EventSet set = nullptr;
  std::vector<nvml::Device> devices;
  std::vector<std::string> names;
  std::string note;

  ~Impl() {
    if (set && set_free) set_free(set);
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }

  // Which device an event came from: its index, or the count when unknown.
  std::size_t index_of(nvml::Device dev) const {
    for (std::size_t i = 0; i < devices.size(); ++i)
      if (devices[i] == dev) return i;
    return devices.size();
  }
};

std::unique_ptr<NvmlWatcher> NvmlWatcher::open(std::string& why) {
  auto impl = std::make_unique<Impl>();
  const std::string path = nvml::library_path();
  impl->lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!impl->lib) {
    why = "NVML not available (" + path + " cannot be loaded)";
    return nullptr;
  }
  void* lib = impl->lib;
  auto init = nvml::entry<nvml::InitFn>(lib, "nvmlInit_v2");
  auto count = nvml::entry<nvml::CountFn>(lib, "nvmlDeviceGetCount_v2");
  auto by_index = nvml::entry<nvml::HandleByIndexFn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto shutdown = nvml::entry<nvml::ShutdownFn>(lib, "nvmlShutdown");
  if (!init || !count || !by_index || !shutdown) {
    why = "NVML library " + path + " lacks its entry points";
    return nullptr;
  }
  if (int rc = init(); rc != nvml::kSuccess) {
    why = "NVML did not initialise (error " + std::to_string(rc) + ")";
    return nullptr;
  }
  impl->shutdown = shutdown;
  unsigned n = 0;
  if (count(&n) != nvml::kSuccess || n == 0) {
    why = "NVML shows no GPU";
    return nullptr;
  }
  impl->uuid = nvml::entry<nvml::UuidFn>(lib, "nvmlDeviceGetUUID");
  impl->ecc = nvml::entry<nvml::EccFn>(lib, "nvmlDeviceGetTotalEccErrors");
  impl->remapped = nvml::entry<nvml::RemappedFn>(lib, "nvmlDeviceGetRemappedRows");
  for (unsigned i = 0; i < n; ++i) {
    nvml::Device dev = nullptr;
    if (by_index(i, &dev) != nvml::kSuccess) dev = nullptr;  // looked at as lost
    impl->devices.push_back(dev);
    char buf[nvml::kUuidLength] = {};
    impl->names.push_back(dev && impl->uuid && impl->uuid(dev, buf, sizeof buf) == nvml::kSuccess
                              ? std::string(buf)
                              : std::string());
  }
  auto set_create = nvml::entry<nvml::SetCreateFn>(lib, "nvmlEventSetCreate");
  auto register_events = nvml::entry<nvml::RegisterFn>(lib, "nvmlDeviceRegisterEvents");
  impl->wait = nvml::entry<nvml::WaitFn>(lib, "nvmlEventSetWait_v2");
  impl->set_free = nvml::entry<nvml::SetFreeFn>(lib, "nvmlEventSetFree");
  if (set_create && register_events && impl->wait && impl->set_free &&
      set_create(&impl->set) == nvml::kSuccess) {
    std::size_t refused = 0;
    for (nvml::Device dev : impl->devices) {
      // Double-bit ECC events are not offered by every board: Xids alone then.
      if (!dev || (register_events(dev, nvml::kEventXid | nvml::kEventDoubleBitEcc, impl->set) !=
                       nvml::kSuccess &&
                   register_events(dev, nvml::kEventXid, impl->set) != nvml::kSuccess))
        ++refused;
    }
    if (refused)
      impl->note = "NVML does not deliver Xid events for " + std::to_string(refused) + " of " +
                   std::to_string(n) + " GPUs here: only their counts are watched";
  } else {
    impl->note = "NVML events are not available here: only the GPUs' counts are watched";
    impl->set = nullptr;
  }
  return std::unique_ptr<NvmlWatcher>(new NvmlWatcher(std::move(impl)));
}

NvmlWatcher::NvmlWatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvmlWatcher::~NvmlWatcher() = default;

std::size_t NvmlWatcher::gpus() const { return impl_->devices.size(); }
const std::string& NvmlWatcher::note() const { return impl_->note; }

std::vector<GpuLook> NvmlWatcher::look() {
  Impl& im = *impl_;
  std::vector<GpuLook> looks(im.devices.size());
  for (std::size_t i = 0; i < looks.size(); ++i) {
    looks[i].index = static_cast<unsigned>(i);
    looks[i].device = im.names[i];
    looks[i].lost = im.devices[i] == nullptr;
  }
  if (im.set) {
    // Drained without waiting; bounded, so that a storm of events cannot
    // hold the watch (the rest come at the next look).
    nvml::EventData data{};
    for (int n = 0; n < 256; ++n) {
      int rc = im.wait(im.set, &data, 0);
      if (rc != nvml::kSuccess) break;
      std::size_t i = im.index_of(data.device);
      if (i == looks.size()) continue;
      if (data.eventType & nvml::kEventXid)
        looks[i].xids.push_back(static_cast<int>(data.eventData));
      else if (data.eventType & nvml::kEventDoubleBitEcc)
        ++looks[i].double_bit_events;
    }
  }
  for (std::size_t i = 0; i < looks.size(); ++i) {
    nvml::Device dev = im.devices[i];
    if (!dev) continue;
    if (im.ecc) {
      unsigned long long count = 0;
      int rc = im.ecc(dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &count);
      if (rc == nvml::kSuccess) looks[i].ecc_uncorrected = count;
      looks[i].lost |= rc == nvml::kErrorGpuIsLost;
    }
    if (im.remapped) {
      unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
      int rc = im.remapped(dev, &corrected, &uncorrected, &pending, &failed);
      if (rc == nvml::kSuccess)
        looks[i].remapped = RemappedRows{corrected, uncorrected, pending != 0, failed != 0};
      looks[i].lost |= rc == nvml::kErrorGpuIsLost;
    }
  }
  return looks;
}

}  // namespace atl::gpu
