// Driver-side health of a GPU through NVML, the checks DCGM's level-1
// diagnostic makes: uncorrected ECC errors, row remapping pending or failed
// (page retirement on pre-Ampere boards), clock event reasons (hardware
// slowdown, power brake, thermal), temperature against the slowdown
// threshold, power against its limit, the PCIe link's generation and width
// against their maxima and its replay counter, and Xid events raised while
// a check runs. NVML is loaded at run time: a machine without the NVIDIA
// driver reports "not available" instead of failing to start.
//
// Reading and judging are apart: NvmlReadings holds what the driver said
// (sampled every 250 ms while the work runs, so clocks, temperature and
// power are seen under load) and judge_health() turns it into findings,
// a pure function tested from recorded values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace atl::gpu {

// nvmlClocksEventReason* bits (nvml.h).
namespace clock_reason {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal = 0x20;
inline constexpr std::uint64_t hw_thermal = 0x40;
inline constexpr std::uint64_t hw_power_brake = 0x80;
inline constexpr std::uint64_t display_clocks = 0x100;
}  // namespace clock_reason

// "HW slowdown, power brake": the reasons set in `mask`, in words.
std::string describe_clock_reasons(std::uint64_t mask);

struct RemappedRows {
  unsigned corrected = 0, uncorrected = 0;  // rows remapped for each kind of error
  bool pending = false;                     // a remapping waits for a GPU reset
  bool failed = false;                      // a remapping failed: the GPU needs replacing
};

// One sample taken while the work runs; a missing value was not readable.
struct NvmlSample {
  std::optional<std::uint64_t> clock_reasons;
  std::optional<unsigned> temperature_c, power_mw, pcie_gen, pcie_width;
};

struct NvmlReadings {
  std::optional<std::uint64_t> ecc_uncorrected;  // volatile count; none: no ECC
  std::optional<RemappedRows> remapped;          // none: not supported (pre-Ampere)
  std::optional<bool> retired_pages_pending;     // none: not supported (Ampere and later)
  std::optional<unsigned> slowdown_temperature_c, power_limit_mw;
  std::optional<unsigned> pcie_gen_max, pcie_width_max, pcie_replays;
  // Over the samples: reasons seen (OR), the highest temperature and power,
  // the highest link generation and the narrowest width.
  int samples = 0;
  std::uint64_t clock_reasons_seen = 0;
  bool clock_reasons_read = false;
  std::optional<unsigned> max_temperature_c, max_power_mw, max_pcie_gen, min_pcie_width;
};

// Folds one sample into the readings.
void add_sample(NvmlReadings& readings, const NvmlSample& sample);

enum class Severity { info, warn, fail };
struct HealthFinding {
  Severity severity = Severity::info;
  std::string text;  // one line, e.g. "row remapping pending: reset the GPU"
};

// DCGM's replay threshold: more PCIe replays than this fail the link.
inline constexpr unsigned kMaxPcieReplays = 80;

// What the readings say, worst first: fail findings make the GPU fail.
std::vector<HealthFinding> judge_health(const NvmlReadings& readings);

struct NvmlHealth {
  bool available = false;
  std::string note;  // why not available, or what could not be watched
  NvmlReadings readings;
  std::vector<HealthFinding> findings;  // judge_health(readings) when available
  bool xids_watched = false;            // NVML accepted the Xid event registration
  std::vector<int> xids;                // Xid events raised while the work ran
  bool ok() const;                      // no fail finding, no critical Xid
  std::string first_failure() const;    // the first fail finding's text, or ""
};

// The GPU at PCI address `pci_bus_id` (CUDA's cudaDeviceGetPCIBusId form,
// "0000:3B:00.0": NVML's and CUDA's device indices need not agree). Xid
// events are watched and clocks, temperature, power and the PCIe link
// sampled every 250 ms while `work` runs (when given).
NvmlHealth nvml_health(const std::string& pci_bus_id, const std::function<void()>& work = {});

}  // namespace atl::gpu
