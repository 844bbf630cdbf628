// atl-burn gemm and transfer: rounds until the duration is over, every round
// verified, a progress line per round and a verdict line per GPU. Every GPU of
// the node burns at once, each on a thread of its own (as gpu-burn does): a
// node's power, cooling and PCIe are stressed together, and an 8-GPU burn
// takes its duration, not eight times it.
#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "atl/gpu/burn_report.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/os/control_channel.hpp"
#include "burn.hpp"

namespace atl::burn {

void report_figure(int gpu, const std::string& metric, double value, const std::string& size,
                   int round) {
  auto fd = os::control_fd_from_environment();
  if (!fd) return;
  // Lost, at worst, with a warning: the verdict lines above are what counts.
  if (auto sent = os::write_line(*fd, gpu::encode_figure({gpu, metric, value, size, round})); !sent)
    std::fprintf(stderr, "atl-burn: figure not sent: %s\n", sent.error().c_str());
}

std::string elapsed(Clock::time_point t0, Millis total) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0).count();
  return std::to_string(secs) + "s/" + format_duration(total);
}

namespace {

// One GPU's burn: the figure its verdict reports (and the node compares) and
// the first problem found.
struct GpuOutcome {
  int rounds = 0;
  double figure = 0;  // average over the rounds
  std::string problem;
  std::string summary;  // the verdict line's middle: "gemm 712.300 TFLOP/s average over 20 rounds"
};

// Runs `burn(dev)` for every GPU at once (a thread each), then prints each
// GPU's verdict in device order; a GPU whose figure is below 90% of the
// node's median fails as slow (a throttled or degraded GPU passes every
// correctness check). 1 if any failed.
template <class Burn>
int on_every_gpu(const gpu::Backend& backend, const Options& o, const char* figure_name,
                 Burn burn) {
  const int devices = backend.device_count();
  std::vector<GpuOutcome> outcomes(static_cast<size_t>(devices));
  std::vector<std::thread> threads;
  for (int dev = 0; dev < devices; ++dev)
    threads.emplace_back([&, dev] { outcomes[static_cast<size_t>(dev)] = burn(dev); });
  for (auto& t : threads) t.join();
  std::vector<double> figures;  // failed GPUs (0) take no part in the median
  for (const auto& out : outcomes) figures.push_back(out.problem.empty() ? out.figure : 0);
  const auto lagging = gpu::lagging_devices(figures);
  const double median = gpu::measured_median(figures);
  int failed = 0;
  for (int dev = 0; dev < devices; ++dev) {
    auto& out = outcomes[static_cast<size_t>(dev)];
    if (out.problem.empty() && lagging[static_cast<size_t>(dev)]) {
      char why[160];
      std::snprintf(why, sizeof why, "slow: %s %.1f is below 90%% of the node's median %.1f",
                    figure_name, out.figure, median);
      out.problem = why;
    }
    std::printf("%s GPU %d (%s): %s: %s%s\n", o.pod.c_str(), dev, backend.name().c_str(),
                out.summary.c_str(), out.problem.empty() ? "PASS" : "FAIL: ", out.problem.c_str());
    failed += !out.problem.empty();
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace

// GEMM rounds until the duration is over; every round verified. On a GPU
// the inputs are random bf16 (real power, real bit patterns) and the results
// go round-robin over 90% of the free memory, so HBM is written and read
// back under the heat of the GEMMs; the first round starts with 300 ms of
// untimed GEMMs so no figure includes the clocks' ramp.
int burn_gemm(gpu::Backend& backend, const Options& o) {
  const bool gpu = backend.name() == "cuda";
  gpu::GemmConfig config;
  config.size = o.size ? o.size : (gpu ? 8192 : 512);
  config.bf16 = !o.fp32;
  config.allow_tf32 = o.tf32;
  config.random_inputs = true;
  config.result_memory_fraction = gpu ? 0.9 : 0;
  return on_every_gpu(backend, o, "TFLOP/s", [&](int dev) {
    gpu::GemmConfig mine = config;  // this GPU's thread adapts its own repeats
    mine.warmup = std::chrono::milliseconds(300);
    GpuOutcome out;
    auto t0 = Clock::now();
    double sum = 0;
    std::int64_t spread = 0;
    while (out.problem.empty() && (out.rounds == 0 || Clock::now() - t0 < o.duration)) {
      Expected<gpu::GemmResult> r = make_error("not run");
      {
        gpu::PhaseMonitor::Scope phase(monitor(), dev,
                                       "gemm round " + std::to_string(out.rounds + 1), o.timeout);
        r = backend.gemm(dev, mine);
      }
      ++out.rounds;
      mine.warmup = std::chrono::milliseconds(0);
      if (!r) {
        out.problem = r.error();
        break;
      }
      sum += r->tflops;
      spread = r->result_bytes;
      // About a second of GEMMs per round from now on: the GPU stays busy
      // between the progress lines.
      if (r->tflops > 0) {
        double one = 2.0 * mine.size * mine.size * mine.size / (r->tflops * 1e12);
        mine.repeats = static_cast<int>(std::clamp(1.0 / one, 1.0, 10000.0));
      }
      report_figure(dev, "gemm_tflops", r->tflops, "", out.rounds);  // the dashboard's chart
      std::printf("%s\n", gpu::format_gemm_round({o.pod, dev, out.rounds, r->tflops, r->ok()},
                                                 elapsed(t0, o.duration))
                              .c_str());
      std::fflush(stdout);
      if (!r->ok()) {
        out.problem = std::to_string(r->differing) + " elements differ between identical GEMMs, " +
                      std::to_string(r->nans) + " NaN, " + std::to_string(r->wrong) +
                      " off the reference";
      }
    }
    out.figure = out.rounds ? sum / out.rounds : 0;
    char summary[200];
    std::snprintf(summary, sizeof summary,
                  "gemm %.3f TFLOP/s average over %d rounds, results over %s", out.figure,
                  out.rounds, gpu::format_burn_size(spread).c_str());
    out.summary = summary;
    if (out.rounds) report_figure(dev, "gemm_tflops", out.figure);
    return out;
  });
}

int burn_transfer(gpu::Backend& backend, const Options& o) {
  return on_every_gpu(backend, o, "H2D GB/s", [&](int dev) {
    GpuOutcome out;
    auto t0 = Clock::now();
    double h2d = 0, d2h = 0, both = 0, d2d = 0;
    while (out.problem.empty() && (out.rounds == 0 || Clock::now() - t0 < o.duration)) {
      Expected<gpu::TransferResult> r = make_error("not run");
      {
        gpu::PhaseMonitor::Scope phase(
            monitor(), dev, "transfer round " + std::to_string(out.rounds + 1), o.timeout);
        r = backend.transfer(dev, o.bytes);
      }
      ++out.rounds;
      if (!r) {
        out.problem = r.error();
        break;
      }
      h2d += r->h2d_gbps;
      d2h += r->d2h_gbps;
      both += r->bidir_gbps;
      d2d += r->d2d_gbps;
      report_figure(dev, "h2d_gbps", r->h2d_gbps, "", out.rounds);
      report_figure(dev, "d2h_gbps", r->d2h_gbps, "", out.rounds);
      std::printf("%s\n",
                  gpu::format_transfer_round({o.pod, dev, out.rounds, r->h2d_gbps, r->d2h_gbps,
                                              r->bidir_gbps, r->d2d_gbps, r->checksum_ok},
                                             elapsed(t0, o.duration))
                      .c_str());
      std::fflush(stdout);
      if (!r->checksum_ok) out.problem = "data changed on the round trip";
    }
    const double n = out.rounds ? out.rounds : 1;
    out.figure = h2d / n;
    // D2D: bytes copied per second; the HBM moves twice that (read + write).
    char summary[240];
    std::snprintf(summary, sizeof summary,
                  "transfer %s H2D %.1f GB/s, D2H %.1f GB/s, D2D %.1f GB/s copied (HBM traffic "
                  "%.1f GB/s) over %d rounds",
                  gpu::format_burn_size(o.bytes).c_str(), h2d / n, d2h / n, d2d / n, 2 * d2d / n,
                  out.rounds);
    out.summary = summary;
    if (out.rounds) {
      report_figure(dev, "h2d_gbps", h2d / n);
      report_figure(dev, "d2h_gbps", d2h / n);
    }
    return out;
  });
}

}  // namespace atl::burn
