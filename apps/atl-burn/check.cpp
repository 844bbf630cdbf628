// atl-burn check: level-1 checks of each GPU, DCGM-style. The devices the pod
// declared are there; atl's known-answer kernel and a GEMM with an exact
// answer are right; copies round-trip; memory holds every pattern; the driver
// reports no uncorrected ECC errors, no row remapping pending or failed, no
// hardware clock slowdown, temperature below the slowdown threshold, a PCIe
// link at full width with few replays (nvml_health.hpp), and no critical Xid
// (kernel log since boot, and NVML events during the check).
// All GPUs of the node are checked at once.
#include <cstdio>
#include <thread>
#include <vector>

#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/xid.hpp"
#include "burn.hpp"

namespace atl::burn {

namespace {

// The work part of one device's check; the first problem found, or "".
std::string exercise(gpu::Backend& backend, int dev, Millis limit) {
  const bool gpu = backend.name() == "cuda";
  gpu::PhaseMonitor::Scope phase(monitor(), dev, "the check's known-answer kernel", limit);
  auto ka = backend.known_answer(dev, gpu ? (4 << 20) : (1 << 20));
  if (!ka) return "known-answer kernel: " + ka.error();
  if (!ka->ok())
    return "known-answer kernel: " + std::to_string(ka->wrong) + " of " +
           std::to_string(ka->elements) + " values wrong";
  // Small integers: every element of the product must be exactly right.
  gpu::GemmConfig config;
  config.size = 256;
  config.repeats = 2;
  config.random_inputs = false;
  next_phase(dev, "the check's GEMM", limit);
  auto g = backend.gemm(dev, config);
  if (!g) return "gemm: " + g.error();
  if (!g->ok()) return "gemm gave wrong results";
  next_phase(dev, "the check's copies", limit);
  auto t = backend.transfer(dev, 16LL << 20);
  if (!t) return "transfer: " + t.error();
  if (!t->checksum_ok) return "transfer changed the data";
  // Most of a GPU's free memory; a bounded slice of a CPU node's RAM.
  next_phase(dev, "the check's memory test", limit);
  auto m = backend.memory_test(dev, gpu ? 0.9 : 0.25);
  if (!m) return "memory test: " + m.error();
  if (!m->ok())
    return "memory test: " + std::to_string(m->bad_words) + " words read back wrong over " +
           gpu::format_burn_size(m->bytes);
  return "";
}

std::string describe_xid(int xid) {
  std::string meaning = gpu::xid_meaning(xid);
  return "Xid " + std::to_string(xid) + (meaning.empty() ? "" : " (" + meaning + ")");
}

}  // namespace

int check(gpu::Backend& backend, const Options& o) {
  const bool gpu = backend.name() == "cuda";
  if (o.expect_gpus > 0 && !gpu) {
    std::printf("%s: check FAIL: the pod declares %d GPUs but CUDA sees none\n", o.pod.c_str(),
                o.expect_gpus);
    return 1;
  }
  if (o.expect_gpus >= 0 && gpu && backend.device_count() != o.expect_gpus) {
    std::printf("%s: check FAIL: the pod declares %d GPUs but CUDA sees %d\n", o.pod.c_str(),
                o.expect_gpus, backend.device_count());
    return 1;
  }
  gpu::KernelXids kernel_log;
  if (gpu) {
    kernel_log = gpu::read_kernel_xids();
    if (!kernel_log.readable)
      std::printf("%s: %s: Xid history not checked\n", o.pod.c_str(), kernel_log.note.c_str());
  }
  // Every GPU at once (a thread each); each one's lines are printed together,
  // in device order.
  struct Verdict {
    std::vector<std::string> lines;
    std::string problem;
  };
  std::vector<Verdict> verdicts(static_cast<size_t>(backend.device_count()));
  std::vector<std::thread> threads;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    threads.emplace_back([&, dev] {
      Verdict& v = verdicts[static_cast<size_t>(dev)];
      const std::string prefix = o.pod + " GPU " + std::to_string(dev) + ": ";
      if (!gpu) {
        v.problem = exercise(backend, dev, o.timeout);
        return;
      }
      const std::string pci = backend.pci_bus_id(dev);
      auto nvml = gpu::nvml_health(pci, [&] { v.problem = exercise(backend, dev, o.timeout); });
      if (!nvml.available || !nvml.note.empty()) v.lines.push_back(prefix + nvml.note);
      for (const auto& f : nvml.findings)
        v.lines.push_back(prefix +
                          (f.severity == gpu::Severity::fail   ? "FAIL: "
                           : f.severity == gpu::Severity::warn ? "warning: "
                                                               : "") +
                          f.text);
      for (int xid : nvml.xids) {
        v.lines.push_back(prefix + describe_xid(xid) + " during the check");
        if (v.problem.empty() && gpu::xid_is_critical(xid))
          v.problem = describe_xid(xid) + " during the check";
      }
      if (v.problem.empty() && !nvml.first_failure().empty())
        v.problem = "NVML: " + nvml.first_failure();
      for (const auto& ev : kernel_log.events) {
        if (!gpu::same_pci_device(ev.pci, pci) || !gpu::xid_is_critical(ev.xid)) continue;
        v.lines.push_back(prefix + "kernel log: " + ev.text);
        if (v.problem.empty()) v.problem = describe_xid(ev.xid) + " in the kernel log since boot";
      }
    });
  }
  for (auto& t : threads) t.join();
  int failed = 0;
  for (size_t dev = 0; dev < verdicts.size(); ++dev) {
    for (const auto& line : verdicts[dev].lines) std::printf("%s\n", line.c_str());
    const std::string& problem = verdicts[dev].problem;
    std::printf("%s GPU %zu (%s): check %s%s\n", o.pod.c_str(), dev, backend.name().c_str(),
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    failed += !problem.empty();
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace atl::burn
