// atl-burn check: level-1 checks of each GPU, DCGM-style. The devices the pod
// declared are there; atl's known-answer kernel and a GEMM with an exact
// answer are right; copies round-trip; memory holds every pattern; the driver
// reports no uncorrected ECC errors, no retired pages waiting for a reset and
// no critical Xid (kernel log since boot, and NVML events during the check).
#include <cstdio>

#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/xid.hpp"
#include "burn.hpp"

namespace atl::burn {

namespace {

// The work part of one device's check; the first problem found, or "".
std::string exercise(gpu::Backend& backend, int dev) {
  const bool gpu = backend.name() == "cuda";
  auto ka = backend.known_answer(dev, gpu ? (4 << 20) : (1 << 20));
  if (!ka) return "known-answer kernel: " + ka.error();
  if (!ka->ok())
    return "known-answer kernel: " + std::to_string(ka->wrong) + " of " +
           std::to_string(ka->elements) + " values wrong";
  gpu::GemmConfig config;
  config.size = 256;
  config.repeats = 2;
  auto g = backend.gemm(dev, config);
  if (!g) return "gemm: " + g.error();
  if (!g->ok()) return "gemm gave wrong results";
  auto t = backend.transfer(dev, 16LL << 20);
  if (!t) return "transfer: " + t.error();
  if (!t->checksum_ok) return "transfer changed the data";
  // Most of a GPU's free memory; a bounded slice of a CPU node's RAM.
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
  int failed = 0;
  for (int dev = 0; dev < backend.device_count(); ++dev) {
    std::string problem;
    if (!gpu) {
      problem = exercise(backend, dev);
    } else {
      const std::string pci = backend.pci_bus_id(dev);
      auto nvml = gpu::nvml_health(pci, [&] { problem = exercise(backend, dev); });
      if (!nvml.available || !nvml.note.empty())
        std::printf("%s GPU %d: %s\n", o.pod.c_str(), dev, nvml.note.c_str());
      for (int xid : nvml.xids) {
        std::printf("%s GPU %d: %s during the check\n", o.pod.c_str(), dev,
                    describe_xid(xid).c_str());
        if (problem.empty() && gpu::xid_is_critical(xid))
          problem = describe_xid(xid) + " during the check";
      }
      if (problem.empty() && nvml.available && nvml.ecc_uncorrected)
        problem = "NVML: " + std::to_string(nvml.ecc_uncorrected) + " uncorrected ECC errors";
      if (problem.empty() && nvml.available && nvml.retired_pages_pending)
        problem = "NVML: retired pages are waiting for a GPU reset";
      for (const auto& ev : kernel_log.events) {
        if (!gpu::same_pci_device(ev.pci, pci) || !gpu::xid_is_critical(ev.xid)) continue;
        std::printf("%s GPU %d: kernel log: %s\n", o.pod.c_str(), dev, ev.text.c_str());
        if (problem.empty()) problem = describe_xid(ev.xid) + " in the kernel log since boot";
      }
    }
    std::printf("%s GPU %d (%s): check %s%s\n", o.pod.c_str(), dev, backend.name().c_str(),
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    std::fflush(stdout);
    failed += !problem.empty();
  }
  return failed ? 1 : 0;
}

}  // namespace atl::burn
