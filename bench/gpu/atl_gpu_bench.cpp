// atl-gpu-bench: libs/gpu's figures on this machine, as a markdown table,
// every figure verified: the known-answer kernel; bf16 and tf32 GEMM
// TFLOP/s (random inputs, 300 ms warm-up, median of 50 timed repeats); the
// check's exact GEMM; pinned H2D/D2H, both ways at once and D2D copies with
// the PCIe link NVML saw under them; the memory test over 90% of free
// memory; NVML's health findings; NCCL with one rank (launch latency and a
// local copy: one rank reduces nothing, so no bus bandwidth); and a burn of
// BURN_SECONDS (random bf16 GEMMs, results over 90% of free memory) with
// the power, clocks and temperature NVML sampled during it. Exits non-zero
// when the backend is not CUDA or any row failed.
// Standalone on purpose (no CAF, no Boost): it builds on a bare GPU machine
// with only CMake and the CUDA toolkit.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/nccl_allreduce.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/phase_monitor.hpp"
#include "atl/gpu/xid.hpp"

namespace {

int failures = 0;

void row(int dev, const std::string& what, const std::string& value, bool ok) {
  std::printf("| %d | %s | %s | %s |\n", dev, what.c_str(), value.c_str(), ok ? "yes" : "NO");
  failures += !ok;
}
void row(int dev, const std::string& what, double value, bool ok) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  row(dev, what, text, ok);
}
void error_row(int dev, const std::string& what, const std::string& error) {
  row(dev, what, "error: " + error, false);
}
void health_rows(int dev, const std::string& during, const atl::gpu::NvmlHealth& h) {
  if (!h.available) {
    error_row(dev, "NVML during " + during, h.note);
    return;
  }
  for (const auto& f : h.findings)
    row(dev, "NVML during " + during, f.text, f.severity != atl::gpu::Severity::fail);
  row(dev, "NVML clock event reasons during " + during,
      atl::gpu::describe_clock_reasons(h.readings.clock_reasons_seen) + " (" +
          std::to_string(h.readings.samples) + " samples)",
      true);
  for (int xid : h.xids) row(dev, "Xid during " + during, std::to_string(xid), false);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int size = argc > 1 ? std::atoi(argv[1]) : 8192;
  long long bytes = argc > 2 ? std::atoll(argv[2]) : (256LL << 20);
  int burn_seconds = argc > 3 ? std::atoi(argv[3]) : 30;
  if (size < 1 || bytes < 2 || burn_seconds < 0) {
    std::fprintf(stderr, "usage: atl-gpu-bench [GEMM_SIZE] [COPY_BYTES] [BURN_SECONDS]\n");
    return 2;
  }
  // Nothing here may hang for good: a phase past its deadline ends the run
  // with a FAIL line naming it.
  atl::gpu::PhaseMonitor watchdog(atl::gpu::exit_when_stuck("atl-gpu-bench"));
  const std::chrono::milliseconds limit(120000);
  auto choice = atl::gpu::choose_backend();
  auto& backend = *choice.backend;
  std::printf("backend: %s, %d device(s), NCCL %s\n", backend.name().c_str(),
              backend.device_count(), atl::gpu::nccl_compiled_in() ? "yes" : "no");
  if (backend.name() != "cuda") {
    std::printf("atl-gpu-bench: FAIL: no CUDA device in use: %s\n", choice.cuda_note.c_str());
    return 1;
  }
  std::printf("\n| device | measure | value | verified |\n|---:|---|---:|---|\n");
  const int devices = backend.device_count();
  for (int dev = 0; dev < devices; ++dev) {
    watchdog.enter(dev, "the known-answer kernel", limit);
    auto ka = backend.known_answer(dev, 16 << 20);
    if (ka)
      row(dev, "known-answer kernel, wrong of 16M", static_cast<double>(ka->wrong), ka->ok());
    else
      error_row(dev, "known-answer kernel", ka.error());
    for (bool bf16 : {true, false}) {
      atl::gpu::GemmConfig config;
      config.size = size;
      config.bf16 = bf16;
      config.allow_tf32 = !bf16;
      config.random_inputs = true;
      config.warmup = std::chrono::milliseconds(300);
      config.repeats = 50;
      std::string what = std::string(bf16 ? "bf16" : "tf32") + " GEMM " + std::to_string(size) +
                         ", random, median of 50 (TFLOP/s)";
      watchdog.enter(dev, what, limit);
      auto g = backend.gemm(dev, config);
      if (g) {
        row(dev, what, g->tflops, g->ok());
        char spread[160];
        std::snprintf(spread, sizeof spread, "%.1f / %.1f / %.1f",
                      atl::gpu::gemm_tflops(size, size, size, g->timing.max),
                      atl::gpu::gemm_tflops(size, size, size, g->timing.mean),
                      atl::gpu::gemm_tflops(size, size, size, g->timing.min));
        row(dev,
            std::string(bf16 ? "bf16" : "tf32") + " GEMM slowest / mean / fastest (after " +
                std::to_string(g->timing.warmup_iterations) + " warm-up GEMMs)",
            spread, true);
      } else {
        error_row(dev, what, g.error());
      }
    }
    atl::gpu::GemmConfig exact;
    exact.size = 256;
    exact.repeats = 2;
    exact.random_inputs = false;
    watchdog.enter(dev, "the check's exact GEMM", limit);
    auto ex = backend.gemm(dev, exact);
    if (ex)
      row(dev, "check's exact GEMM 256, elements off", static_cast<double>(ex->wrong), ex->ok());
    else
      error_row(dev, "check's exact GEMM", ex.error());
    const std::string pci = backend.pci_bus_id(dev);
    // Copies, with NVML sampling the PCIe link while they run.
    atl::gpu::TransferResult t;
    std::string transfer_error;
    watchdog.enter(dev, "the copies", limit);
    auto link = atl::gpu::nvml_health(pci, [&] {
      for (int round = 0; round < 3; ++round) {  // a few rounds: the samples see the link busy
        auto r = backend.transfer(dev, bytes);
        if (!r) {
          transfer_error = r.error();
          return;
        }
        t = *r;
      }
    });
    if (!transfer_error.empty()) {
      error_row(dev, "copies", transfer_error);
    } else {
      std::string mib = std::to_string(bytes >> 20) + " MiB";
      row(dev, "H2D pinned " + mib + " (GB/s)", t.h2d_gbps, t.checksum_ok);
      row(dev, "D2H pinned " + mib + " (GB/s)", t.d2h_gbps, t.checksum_ok);
      row(dev, "both ways at once (GB/s, total)", t.bidir_gbps, t.checksum_ok);
      row(dev, "D2D " + mib + " (GB/s bytes copied)", t.d2d_gbps, t.checksum_ok);
      row(dev, "D2D HBM traffic, read + write (GB/s)", 2 * t.d2d_gbps, t.checksum_ok);
      const auto& r = link.readings;
      if (r.max_pcie_gen && r.min_pcie_width)
        row(dev,
            "PCIe link under the copies (max Gen" + std::to_string(r.pcie_gen_max.value_or(0)) +
                " x" + std::to_string(r.pcie_width_max.value_or(0)) + ")",
            "Gen" + std::to_string(*r.max_pcie_gen) + " x" + std::to_string(*r.min_pcie_width),
            true);
      else
        row(dev, "PCIe link under the copies", "not readable (" + link.note + ")", true);
    }
    // The check's memory test, with the driver's health watched meanwhile.
    atl::gpu::MemoryTestResult memory;
    std::string memory_error;
    watchdog.enter(dev, "the memory test", limit);
    auto health = atl::gpu::nvml_health(pci, [&] {
      auto m = backend.memory_test(dev, 0.9);
      if (m)
        memory = *m;
      else
        memory_error = m.error();
    });
    if (memory_error.empty())
      row(dev,
          "memory test " + std::to_string(memory.bytes >> 20) + " MiB x" +
              std::to_string(memory.patterns) + " patterns, bad words",
          static_cast<double>(memory.bad_words), memory.ok());
    else
      error_row(dev, "memory test", memory_error);
    health_rows(dev, "the memory test", health);
    auto xids = atl::gpu::read_kernel_xids();
    int here = 0;
    for (const auto& ev : xids.events) here += atl::gpu::same_pci_device(ev.pci, pci);
    if (xids.readable)
      row(dev, "Xid reports in the kernel log for " + pci, here, here == 0);
    else
      row(dev, "kernel log", xids.note, true);
    watchdog.leave(dev);
  }
  // NCCL with one rank on device 0: it reduces nothing (in place is a no-op,
  // out of place a local copy), so no bus bandwidth: the launch latency and
  // the copy rate, each as nccl-tests times it (5 warm-up, 20 timed).
  if (atl::gpu::nccl_compiled_in()) {
    watchdog.enter(-1, "NCCL with one rank", limit);
    atl::gpu::NcclSetup setup;
    setup.devices = {0};
    auto nccl = atl::gpu::NcclAllreduce::create(setup);
    if (!nccl) {
      error_row(0, "NCCL init, world 1", nccl.error());
    } else {
      auto lat = (*nccl)->allreduce(8, 1, {5, 20, true});
      if (lat)
        row(0, "NCCL allreduce 8 B, world 1, in place: launch latency (us)", lat->seconds * 1e6,
            lat->wrong == 0);
      else
        error_row(0, "NCCL allreduce 8 B, world 1", lat.error());
      auto copy = (*nccl)->allreduce(1LL << 30, 1, {5, 20, false});
      if (copy)
        row(0, "NCCL allreduce 1G, world 1, out of place: a local copy (GB/s copied)",
            atl::gpu::algbw_gbps(1LL << 30, copy->seconds), copy->wrong == 0);
      else
        error_row(0, "NCCL allreduce 1G, world 1", copy.error());
    }
    watchdog.leave(-1);
  }
  // The burn: every device at once would be the node's burn; here device 0
  // for BURN_SECONDS, NVML sampling power, clocks and temperature.
  if (burn_seconds > 0) {
    atl::gpu::GemmConfig config;
    config.size = size;
    config.random_inputs = true;
    config.result_memory_fraction = 0.9;
    config.warmup = std::chrono::milliseconds(300);
    config.repeats = 200;
    std::vector<double> figures;
    std::int64_t differing = 0, nans = 0, wrong = 0, spread = 0;
    std::string burn_error;
    auto health = atl::gpu::nvml_health(backend.pci_bus_id(0), [&] {
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(burn_seconds)) {
        watchdog.enter(0, "burn round " + std::to_string(figures.size() + 1), limit);
        auto r = backend.gemm(0, config);
        if (!r) {
          burn_error = r.error();
          return;
        }
        config.warmup = std::chrono::milliseconds(0);
        figures.push_back(r->tflops);
        differing += r->differing;
        nans += r->nans;
        wrong = r->wrong;
        spread = r->result_bytes;
        std::printf("burn round %zu: %.1f TFLOP/s, %lld differing\n", figures.size(), r->tflops,
                    static_cast<long long>(r->differing));
      }
    });
    watchdog.leave(0);
    if (!burn_error.empty()) {
      error_row(0, "burn", burn_error);
    } else {
      std::vector<double> sorted = figures;
      const double median = atl::gpu::median_of(sorted);
      double lowest = figures.empty() ? 0 : figures.front();
      for (double f : figures) lowest = f < lowest ? f : lowest;
      row(0,
          "burn " + std::to_string(burn_seconds) + " s bf16 " + std::to_string(size) + ", " +
              std::to_string(figures.size()) + " rounds, results over " +
              atl::gpu::format_burn_size(spread) + ": median TFLOP/s",
          median, differing == 0 && nans == 0 && wrong == 0);
      row(0, "burn: lowest round (TFLOP/s)", lowest, true);
      row(0, "burn: results differing from the first / NaN / off the reference",
          std::to_string(differing) + " / " + std::to_string(nans) + " / " + std::to_string(wrong),
          differing == 0 && nans == 0 && wrong == 0);
      const auto& r = health.readings;
      if (r.max_power_mw)
        row(0,
            "burn: highest power (W) of a " + std::to_string(r.power_limit_mw.value_or(0) / 1000) +
                " W limit",
            *r.max_power_mw / 1000.0, true);
      health_rows(0, "the burn", health);
    }
  }
  std::printf("\natl-gpu-bench: %d row(s) failed\n", failures);
  return failures ? 1 : 0;
}
