#include "atl/gpu/nvml_health.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

#include "atl/gpu/ticker.hpp"
#include "atl/gpu/xid.hpp"
#include "nvml_api.hpp"

namespace atl::gpu {

std::string describe_clock_reasons(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {clock_reason::hw_slowdown, "HW slowdown"},
      {clock_reason::hw_thermal, "HW thermal slowdown"},
      {clock_reason::hw_power_brake, "HW power brake"},
      {clock_reason::sw_thermal, "SW thermal slowdown"},
      {clock_reason::sw_power_cap, "SW power cap"},
      {clock_reason::sync_boost, "sync boost"},
      {clock_reason::applications_clocks, "applications clocks setting"},
      {clock_reason::display_clocks, "display clock setting"},
      {clock_reason::gpu_idle, "idle"},
  };
  std::string out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  if (mask & ~known) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(mask & ~known));
    out += (out.empty() ? "other (" : ", other (") + std::string(hex) + ")";
  }
  return out.empty() ? "none" : out;
}

void add_sample(NvmlReadings& r, const NvmlSample& s) {
  ++r.samples;
  if (s.clock_reasons) {
    r.clock_reasons_read = true;
    r.clock_reasons_seen |= *s.clock_reasons;
  }
  auto raise = [](std::optional<unsigned>& slot, std::optional<unsigned> v) {
    if (v && (!slot || *v > *slot)) slot = v;
  };
  raise(r.max_temperature_c, s.temperature_c);
  raise(r.max_power_mw, s.power_mw);
  raise(r.max_pcie_gen, s.pcie_gen);
  if (s.pcie_width && (!r.min_pcie_width || *s.pcie_width < *r.min_pcie_width))
    r.min_pcie_width = s.pcie_width;
}

std::vector<HealthFinding> judge_health(const NvmlReadings& r) {
  std::vector<HealthFinding> out;
  auto add = [&](Severity s, std::string text) { out.push_back({s, std::move(text)}); };
  if (r.ecc_uncorrected && *r.ecc_uncorrected)
    add(Severity::fail,
        std::to_string(*r.ecc_uncorrected) + " uncorrected ECC errors since the driver loaded");
  if (r.remapped) {
    if (r.remapped->failed)
      add(Severity::fail, "row remapping failed: the GPU's memory cannot be repaired");
    if (r.remapped->pending) add(Severity::fail, "row remapping pending: reset the GPU");
    if (r.remapped->uncorrected || r.remapped->corrected)
      add(Severity::info, "rows remapped: " + std::to_string(r.remapped->uncorrected) +
                              " for uncorrectable and " + std::to_string(r.remapped->corrected) +
                              " for correctable errors");
  }
  if (r.retired_pages_pending) {
    if (*r.retired_pages_pending) add(Severity::fail, "retired pages are waiting for a GPU reset");
  } else if (r.remapped) {
    add(Severity::info, "retired pages: not supported (row remapping replaces them)");
  } else {
    add(Severity::warn, "neither row remapping nor page retirement could be read");
  }
  if (r.clock_reasons_read) {
    const std::uint64_t hard =
        clock_reason::hw_slowdown | clock_reason::hw_thermal | clock_reason::hw_power_brake;
    if (r.clock_reasons_seen & hard)
      add(Severity::fail,
          "clocks held down by " + describe_clock_reasons(r.clock_reasons_seen & hard));
    if (r.clock_reasons_seen & clock_reason::sw_thermal)
      add(Severity::warn, "clocks held down by SW thermal slowdown");
    if (r.clock_reasons_seen & clock_reason::sw_power_cap)
      add(Severity::info, "clocks at the power cap (expected at full load)");
  } else if (r.samples) {
    add(Severity::info, "clock event reasons: not supported");
  }
  if (r.max_temperature_c) {
    std::string t = std::to_string(*r.max_temperature_c) + " C";
    if (r.slowdown_temperature_c && *r.max_temperature_c >= *r.slowdown_temperature_c)
      add(Severity::fail, "temperature " + t + " reached the slowdown threshold of " +
                              std::to_string(*r.slowdown_temperature_c) + " C");
    else if (r.slowdown_temperature_c && *r.max_temperature_c + 5 >= *r.slowdown_temperature_c)
      add(Severity::warn, "temperature " + t + " within 5 C of the slowdown threshold");
    else
      add(Severity::info,
          "temperature at most " + t +
              (r.slowdown_temperature_c
                   ? " (slowdown at " + std::to_string(*r.slowdown_temperature_c) + " C)"
                   : std::string()));
  }
  if (r.max_power_mw) {
    std::string p = std::to_string(*r.max_power_mw / 1000) + " W";
    if (r.power_limit_mw)
      add(Severity::info,
          "power at most " + p + " of a " + std::to_string(*r.power_limit_mw / 1000) + " W limit");
    else
      add(Severity::info, "power at most " + p);
  }
  if (r.min_pcie_width && r.pcie_width_max && *r.min_pcie_width < *r.pcie_width_max)
    add(Severity::fail, "PCIe link x" + std::to_string(*r.min_pcie_width) + " of x" +
                            std::to_string(*r.pcie_width_max) + ": a degraded link");
  if (r.max_pcie_gen && r.pcie_gen_max) {
    // An idle link drops its generation to save power; under a copy it must
    // reach the maximum. Only a link that never got there is worth a word.
    if (*r.max_pcie_gen < *r.pcie_gen_max)
      add(Severity::warn, "PCIe link reached Gen" + std::to_string(*r.max_pcie_gen) + " of Gen" +
                              std::to_string(*r.pcie_gen_max));
    else
      add(Severity::info, "PCIe link Gen" + std::to_string(*r.max_pcie_gen) +
                              (r.min_pcie_width ? " x" + std::to_string(*r.min_pcie_width) : ""));
  }
  if (r.pcie_replays && *r.pcie_replays > kMaxPcieReplays)
    add(Severity::fail, "PCIe replay counter " + std::to_string(*r.pcie_replays) + " (more than " +
                            std::to_string(kMaxPcieReplays) + ")");
  else if (r.pcie_replays && *r.pcie_replays)
    add(Severity::info, "PCIe replay counter " + std::to_string(*r.pcie_replays));
  std::stable_sort(out.begin(), out.end(), [](const HealthFinding& a, const HealthFinding& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
  return out;
}

bool NvmlHealth::ok() const {
  for (int xid : xids)
    if (xid_is_critical(xid)) return false;
  return first_failure().empty();
}

std::string NvmlHealth::first_failure() const {
  for (const auto& f : findings)
    if (f.severity == Severity::fail) return f.text;
  return "";
}

namespace {

using namespace nvml;

struct Nvml {
  void* lib = nullptr;
  TemperatureFn temperature = nullptr, threshold = nullptr;
  ReasonsFn reasons = nullptr;
  UintFn power = nullptr, power_limit = nullptr, gen = nullptr, gen_max = nullptr, width = nullptr,
         width_max = nullptr, replays = nullptr;

  explicit Nvml(void* l) : lib(l) {
    temperature = entry<TemperatureFn>(lib, "nvmlDeviceGetTemperature");
    threshold = entry<TemperatureFn>(lib, "nvmlDeviceGetTemperatureThreshold");
    reasons = entry<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons) reasons = entry<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    power = entry<UintFn>(lib, "nvmlDeviceGetPowerUsage");
    power_limit = entry<UintFn>(lib, "nvmlDeviceGetEnforcedPowerLimit");
    gen = entry<UintFn>(lib, "nvmlDeviceGetCurrPcieLinkGeneration");
    gen_max = entry<UintFn>(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
    width = entry<UintFn>(lib, "nvmlDeviceGetCurrPcieLinkWidth");
    width_max = entry<UintFn>(lib, "nvmlDeviceGetMaxPcieLinkWidth");
    replays = entry<UintFn>(lib, "nvmlDeviceGetPcieReplayCounter");
  }

  static std::optional<unsigned> read(UintFn fn, Device dev) {
    unsigned v = 0;
    if (fn && fn(dev, &v) == kSuccess) return v;
    return std::nullopt;
  }

  NvmlSample sample(Device dev) const {
    NvmlSample s;
    unsigned long long mask = 0;
    if (reasons && reasons(dev, &mask) == kSuccess) s.clock_reasons = mask;
    unsigned t = 0;
    if (temperature && temperature(dev, kTemperatureGpu, &t) == kSuccess) s.temperature_c = t;
    s.power_mw = read(power, dev);
    s.pcie_gen = read(gen, dev);
    s.pcie_width = read(width, dev);
    return s;
  }
};

// Samples `dev` every 250 ms on a thread of its own, and once more at the end.
class Sampler {
 public:
  Sampler(const Nvml& nvml, Device dev, NvmlReadings& readings)
      : nvml_(nvml),
        dev_(dev),
        readings_(readings),
        ticker_(std::chrono::milliseconds(250), [this] { take(); }) {}
  ~Sampler() {
    ticker_.stop();
    take();  // the state just after the work
  }

 private:
  void take() { add_sample(readings_, nvml_.sample(dev_)); }
  const Nvml& nvml_;
  Device dev_;
  NvmlReadings& readings_;
  Ticker ticker_;  // last: ticks once the rest is set
};

}  // namespace

NvmlHealth nvml_health(const std::string& pci_bus_id, const std::function<void()>& work) {
  NvmlHealth h;
  void* lib = dlopen(nvml::library_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    h.note = "NVML not available (no NVIDIA driver library)";
    if (work) work();
    return h;
  }
  auto init = entry<InitFn>(lib, "nvmlInit_v2");
  auto shutdown = entry<ShutdownFn>(lib, "nvmlShutdown");
  auto handle = entry<HandleByPciFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  auto ecc = entry<EccFn>(lib, "nvmlDeviceGetTotalEccErrors");
  auto pending = entry<PendingFn>(lib, "nvmlDeviceGetRetiredPagesPendingStatus");
  auto remapped = entry<RemappedFn>(lib, "nvmlDeviceGetRemappedRows");
  auto set_create = entry<SetCreateFn>(lib, "nvmlEventSetCreate");
  auto register_events = entry<RegisterFn>(lib, "nvmlDeviceRegisterEvents");
  auto wait = entry<WaitFn>(lib, "nvmlEventSetWait_v2");
  auto set_free = entry<SetFreeFn>(lib, "nvmlEventSetFree");
  Device dev = nullptr;
  if (!init || !shutdown || !handle) {
    h.note = "NVML library lacks its entry points";
  } else if (init() != kSuccess) {
    h.note = "NVML did not initialise";
    shutdown = nullptr;
  } else if (handle(pci_bus_id.c_str(), &dev) != kSuccess) {
    h.note = "NVML has no device at PCI " + pci_bus_id;
  } else {
    h.available = true;
  }
  Nvml nvml(lib);
  EventSet set = nullptr;
  if (h.available && set_create && register_events && wait && set_free &&
      set_create(&set) == kSuccess) {
    // Unsupported on some boards and inside some containers: then only the
    // kernel log speaks of Xids.
    h.xids_watched = register_events(dev, kEventXid, set) == kSuccess;
    if (!h.xids_watched) h.note = "NVML does not deliver Xid events here";
  }
  if (h.available) {
    Sampler sampler(nvml, dev, h.readings);
    if (work) work();
  } else if (work) {
    work();
  }
  if (h.xids_watched) {
    EventData data{};
    while (wait(set, &data, 1) == kSuccess) {
      if (data.eventType == kEventXid) h.xids.push_back(static_cast<int>(data.eventData));
    }
  }
  if (set) set_free(set);
  if (h.available) {
    NvmlReadings& r = h.readings;
    unsigned long long count = 0;
    // Devices without ECC answer "not supported": that is no error.
    if (ecc && ecc(dev, kMemoryErrorUncorrected, kVolatileEcc, &count) == kSuccess)
      r.ecc_uncorrected = count;
    int state = 0;
    if (pending && pending(dev, &state) == kSuccess) r.retired_pages_pending = state != 0;
    unsigned corrected = 0, uncorrected = 0, is_pending = 0, failed = 0;
    if (remapped && remapped(dev, &corrected, &uncorrected, &is_pending, &failed) == kSuccess)
      r.remapped = RemappedRows{corrected, uncorrected, is_pending != 0, failed != 0};
    unsigned t = 0;
    if (nvml.threshold && nvml.threshold(dev, kThresholdSlowdown, &t) == kSuccess)
      r.slowdown_temperature_c = t;
    r.power_limit_mw = Nvml::read(nvml.power_limit, dev);
    r.pcie_gen_max = Nvml::read(nvml.gen_max, dev);
    r.pcie_width_max = Nvml::read(nvml.width_max, dev);
    r.pcie_replays = Nvml::read(nvml.replays, dev);
    h.findings = judge_health(r);
  }
  if (shutdown) shutdown();
  dlclose(lib);
  return h;
}

}  // namespace atl::gpu
