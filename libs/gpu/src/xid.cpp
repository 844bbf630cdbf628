#include "atl/gpu/xid.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace atl::gpu {

namespace {

struct XidInfo {
  int xid;
  bool critical;
  const char* meaning;
};

// From NVIDIA's Xid catalogue for Ampere and later (docs.nvidia.com/deploy/
// xid-errors, "Analyzing Xid Errors with the Xid Catalog"), checked again
// 2026-11: critical = its immediate action resets the GPU, reboots the node
// or needs service; RESTART_APP ones (the application's fault, or an error
// contained to it) are not, and must not taint a node.
constexpr XidInfo kXids[] = {
    {13, false, "graphics engine exception"},
    {31, false, "GPU memory page fault (usually the program's bad address)"},
    {43, false, "GPU stopped processing (a context was killed)"},
    {45, false, "preemptive cleanup after a context ended"},
    {46, true, "GPU stopped processing (reset required)"},
    {48, true, "double-bit ECC error"},
    {61, true, "internal micro-controller breakpoint"},
    {62, true, "internal micro-controller halt"},
    {63, true, "ECC page retirement or row remapping recorded"},
    {64, true, "ECC page retirement or row remapping failed"},
    {74, true, "NVLink error"},
    {79, true, "GPU has fallen off the bus"},
    {92, true, "high single-bit ECC error rate"},
    {94, false,
     "contained uncorrectable ECC error (the application was stopped; the GPU stays usable)"},
    {95, true, "uncontained uncorrectable ECC error"},
    {119, true, "GSP RPC timeout"},
    {120, true, "GSP error"},
    {140, true, "unrecovered ECC error"},
    {143, true, "GPU initialization failure"},
    {154, true, "GPU recovery action changed (the driver asks for a reset, a reboot or a drain)"},
};

const XidInfo* find_xid(int xid) {
  for (const auto& info : kXids)
    if (info.xid == xid) return &info;
  return nullptr;
}

// "0000:3B:00.0" -> {domain 0, "3b:00"}.
std::optional<std::pair<unsigned long, std::string>> split_pci(std::string_view pci) {
  auto first = pci.find(':');
  // A PCI domain is 16 bits (4 hex digits; some tools print 8): longer is not one.
  if (first == std::string_view::npos || first == 0 || first > 8) return std::nullopt;
  std::string domain(pci.substr(0, first));
  if (domain.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return std::nullopt;
  std::string rest(pci.substr(first + 1));
  if (auto dot = rest.find('.'); dot != std::string::npos) rest.resize(dot);
  if (rest.size() != 5 || rest[2] != ':') return std::nullopt;
  std::transform(rest.begin(), rest.end(), rest.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::make_pair(std::stoul(domain, nullptr, 16), rest);
}

}  // namespace

std::optional<XidEvent> parse_xid_line(std::string_view line) {
  // A /dev/kmsg record carries "prio,seq,time,flags;" before the message.
  if (auto semi = line.find(';'); semi != std::string_view::npos && line.find("NVRM") > semi)
    line.remove_prefix(semi + 1);
  constexpr std::string_view kTag = "NVRM: Xid (PCI:";
  auto at = line.find(kTag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kTag.size());
  auto close = rest.find("):");
  if (close == std::string_view::npos || close == 0) return std::nullopt;
  XidEvent ev;
  ev.pci = std::string(rest.substr(0, close));
  if (!split_pci(ev.pci)) return std::nullopt;
  rest.remove_prefix(close + 2);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
  if (digits == 0 || digits > 6) return std::nullopt;
  ev.xid = std::stoi(std::string(rest.substr(0, digits)));
  std::string_view text = line.substr(at);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  ev.text = std::string(text);
  return ev;
}

bool xid_is_critical(int xid) {
  const XidInfo* info = find_xid(xid);
  return info && info->critical;
}

std::string xid_meaning(int xid) {
  const XidInfo* info = find_xid(xid);
  return info ? info->meaning : "";
}

bool same_pci_device(std::string_view a, std::string_view b) {
  auto pa = split_pci(a), pb = split_pci(b);
  return pa && pb && *pa == *pb;
}

KernelXids read_kernel_xids(const std::string& path) {
  KernelXids out;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    out.note = "kernel log " + path + " not readable (" + std::strerror(errno) + ")";
    return out;
  }
  out.readable = true;
  // /dev/kmsg hands out one record per read; a file, any number of lines.
  std::string pending;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) continue;  // records overwritten while reading: go on
    if (n <= 0) break;                      // EOF, or EAGAIN at the end of the ring
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (auto ev = parse_xid_line(std::string_view(pending).substr(start, nl - start)))
        out.events.push_back(std::move(*ev));
    }
    pending.erase(0, start);
  }
  if (auto ev = parse_xid_line(pending)) out.events.push_back(std::move(*ev));
  ::close(fd);
  return out;
}

}  // namespace atl::gpu
