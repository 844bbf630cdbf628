// Xid events: the NVIDIA driver's error reports ("NVRM: Xid (PCI:0000:3b:00):
// 79, pid=..., GPU has fallen off the bus."). A check reads them from two
// places: the kernel log since boot (/dev/kmsg, when the pod may read it) and
// NVML events raised while the check's own work runs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atl::gpu {

struct XidEvent {
  std::string pci;  // as the driver wrote it, e.g. "0000:3b:00"
  int xid = 0;
  std::string text;  // the whole message, for the verdict line
};

// The Xid in one kernel-log line (a /dev/kmsg record "6,1,2,-;NVRM: Xid ..."
// or a plain dmesg line), or nothing when the line is not an Xid report.
std::optional<XidEvent> parse_xid_line(std::string_view line);

// Xids that mean the GPU (or its memory or links) cannot be trusted until
// someone looks: a check fails on them. Others (31: a user's bad address,
// 13: a graphics exception, 43: a killed context...) are the program's doing.
bool xid_is_critical(int xid);
// A few words on what the Xid means ("GPU fell off the bus"), or "" if unknown.
std::string xid_meaning(int xid);

// Whether two PCI addresses name the same device, whatever the case, the
// width of the domain ("0000:" or "00000000:") or a function suffix (".0").
bool same_pci_device(std::string_view a, std::string_view b);

struct KernelXids {
  bool readable = false;
  std::string note;  // why the log could not be read
  std::vector<XidEvent> events;
};
// Every Xid record in the kernel log at `path` (the ring buffer since boot).
KernelXids read_kernel_xids(const std::string& path = "/dev/kmsg");

}  // namespace atl::gpu
