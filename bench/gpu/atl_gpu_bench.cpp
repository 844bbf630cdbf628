// atl-gpu-bench: libs/gpu's figures on this machine, as a markdown table:
// the known-answer kernel, bf16 (and tf32) GEMM TFLOP/s, pinned H2D/D2H,
// both ways at once and D2D copies, and an NCCL allreduce of world size 1
// per size, each verified. Standalone on purpose (no CAF, no Boost): it
// builds on a bare GPU machine with only CMake and the CUDA toolkit.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/nccl_allreduce.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/xid.hpp"

int main(int argc, char** argv) {
  int size = argc > 1 ? std::atoi(argv[1]) : 8192;
  long long bytes = argc > 2 ? std::atoll(argv[2]) : (256LL << 20);
  if (size < 1 || bytes < 2) {
    std::fprintf(stderr, "usage: atl-gpu-bench [GEMM_SIZE] [COPY_BYTES]\n");
    return 2;
  }
  auto backend = atl::gpu::make_backend();
  std::printf("backend: %s, %d device(s), NCCL %s\n\n", backend->name().c_str(),
              backend->device_count(), atl::gpu::nccl_compiled_in() ? "yes" : "no");
  std::printf("| device | measure | value | verified |\n|---:|---|---:|---|\n");
  int failures = 0;
  auto row = [&](int dev, const std::string& what, double value, bool ok) {
    std::printf("| %d | %s | %.1f | %s |\n", dev, what.c_str(), value, ok ? "yes" : "NO");
    failures += !ok;
  };
  auto error_row = [&](int dev, const std::string& what, const std::string& error) {
    std::printf("| %d | %s | error: %s | no |\n", dev, what.c_str(), error.c_str());
    ++failures;
  };
  const int devices = backend->device_count();
  for (int dev = 0; dev < devices; ++dev) {
    auto ka = backend->known_answer(dev, 16 << 20);
    if (ka)
      row(dev, "known-answer kernel, wrong of 16M", static_cast<double>(ka->wrong), ka->ok());
    else
      error_row(dev, "known-answer kernel", ka.error());
    for (bool bf16 : {true, false}) {
      atl::gpu::GemmConfig config;
      config.size = size;
      config.bf16 = bf16;
      config.allow_tf32 = !bf16;
      config.repeats = 5;
      std::string what =
          std::string(bf16 ? "bf16" : "tf32") + " GEMM " + std::to_string(size) + " (TFLOP/s)";
      auto g = backend->gemm(dev, config);
      if (g)
        row(dev, what, g->tflops, g->ok());
      else
        error_row(dev, what, g.error());
    }
    // The check's memory test and driver health, as atlctl check runs them.
    const std::string pci = backend->pci_bus_id(dev);
    atl::gpu::MemoryTestResult memory;
    std::string memory_error;
    auto health = atl::gpu::nvml_health(pci, [&] {
      auto m = backend->memory_test(dev, 0.9);
      if (m)
        memory = *m;
      else
        memory_error = m.error();
    });
    if (memory_error.empty())
      row(dev,
          "memory test " + std::to_string(memory.bytes >> 20) + " MiB x" +
              std::to_string(memory.patterns) + " passes, bad words",
          static_cast<double>(memory.bad_words), memory.ok());
    else
      error_row(dev, "memory test", memory_error);
    if (backend->name() == "cuda") {  // no driver to ask on the CPU path
      if (health.available)
        row(dev,
            "NVML uncorrected ECC (Xid events watched: " +
                std::string(health.xids_watched ? "yes" : "no") + ")",
            static_cast<double>(health.ecc_uncorrected), health.ok());
      else
        error_row(dev, "NVML at " + pci, health.note);
      auto xids = atl::gpu::read_kernel_xids();
      int here = 0;
      for (const auto& ev : xids.events) here += atl::gpu::same_pci_device(ev.pci, pci);
      if (xids.readable)
        row(dev, "Xid reports in the kernel log for " + pci, here, true);
      else
        std::printf("| %d | kernel log | %s | - |\n", dev, xids.note.c_str());
    }
    auto t = backend->transfer(dev, bytes);
    if (!t) {
      error_row(dev, "copies", t.error());
      continue;
    }
    std::string mib = std::to_string(bytes >> 20) + " MiB";
    row(dev, "H2D pinned " + mib + " (GB/s)", t->h2d_gbps, t->checksum_ok);
    row(dev, "D2H pinned " + mib + " (GB/s)", t->d2h_gbps, t->checksum_ok);
    row(dev, "both ways at once (GB/s)", t->bidir_gbps, t->checksum_ok);
    row(dev, "D2D " + mib + " (GB/s)", t->d2d_gbps, t->checksum_ok);
  }
  // NCCL, world size 1 on device 0: the seed's sizes, a warm-up first.
  if (backend->name() == "cuda" && atl::gpu::nccl_compiled_in()) {
    atl::gpu::NcclSetup setup;
    setup.devices = {0};
    auto nccl = atl::gpu::NcclAllreduce::create(setup);
    if (!nccl) {
      error_row(0, "NCCL allreduce, world 1", nccl.error());
    } else {
      const auto sizes = atl::gpu::allreduce_sizes(INT64_MAX);
      (*nccl)->allreduce(sizes.front(), 0);
      for (std::int64_t s : sizes) {
        std::string what =
            "NCCL allreduce " + atl::gpu::format_burn_size(s) + ", world 1 (AlgBW GB/s)";
        auto r = (*nccl)->allreduce(s, 1);
        if (r)
          row(0, what, atl::gpu::algbw_gbps(s, r->seconds), r->wrong == 0);
        else
          error_row(0, what, r.error());
      }
    }
  }
  return failures ? 1 : 0;
}
