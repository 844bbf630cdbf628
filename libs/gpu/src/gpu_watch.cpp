#include "atl/gpu/gpu_watch.hpp"

#include "atl/gpu/xid.hpp"

namespace atl::gpu {

namespace {

std::string name_of(const GpuLook& look) {
  std::string out = "GPU " + std::to_string(look.index);
  if (!look.device.empty()) out += " (" + look.device + ")";
  return out;
}

std::string xid_words(int xid) {
  std::string meaning = xid_meaning(xid);
  return "Xid " + std::to_string(xid) + (meaning.empty() ? "" : ", " + meaning);
}

// The first reason `look` shows a fault, with its Xid, or nothing.
std::optional<GpuFault> fault_in(const GpuLook& look, std::optional<std::uint64_t> ecc_baseline) {
  auto fault = [&](std::string why, int xid = 0) {
    return GpuFault{look.index, look.device, xid, name_of(look) + ": " + std::move(why)};
  };
  if (look.lost) return fault("lost (NVML answers GPU_IS_LOST: it fell off the bus)", 0);
  for (int xid : look.xids)
    if (xid_is_critical(xid)) return fault(xid_words(xid), xid);
  if (look.double_bit_events > 0) return fault("double-bit ECC error");
  if (look.ecc_uncorrected && ecc_baseline && *look.ecc_uncorrected > *ecc_baseline)
    return fault(std::to_string(*look.ecc_uncorrected - *ecc_baseline) +
                 " new uncorrected ECC errors");
  if (look.remapped && look.remapped->failed)
    return fault("row remapping failed: its memory cannot be repaired");
  if (look.remapped && look.remapped->pending)
    return fault("row remapping pending: the GPU needs a reset");
  return std::nullopt;
}

}  // namespace

GpuVerdict GpuFaultWatch::observe(const std::vector<GpuLook>& looks) {
  GpuVerdict out;
  for (const auto& look : looks) {
    auto [it, first] = seen_.try_emplace(look.index);
    Seen& seen = it->second;
    if (first || !seen.ecc_baseline) seen.ecc_baseline = look.ecc_uncorrected;
    for (int xid : look.xids)
      if (!xid_is_critical(xid))
        out.notes.push_back({look.index, name_of(look) + ": " + xid_words(xid)});
    if (seen.faulted) continue;
    if (auto fault = fault_in(look, seen.ecc_baseline)) {
      seen.faulted = true;
      out.faults.push_back(std::move(*fault));
    }
  }
  return out;
}

bool GpuFaultWatch::faulted(unsigned index) const {
  auto it = seen_.find(index);
  return it != seen_.end() && it->second.faulted;
}

}  // namespace atl::gpu
