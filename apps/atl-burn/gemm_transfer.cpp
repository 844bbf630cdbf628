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

void report_figure(int gpu, const std::string& metric, double value, const std::string& size) {
  auto fd = os::control_fd_from_environment();
  if (!fd) return;
  // Lost, at worst, with a warning: the verdict lines above are what counts.
  if (auto sent = os::write_line(*fd, gpu::encode_figure({gpu, metric, value, size})); !sent)
    std::fprintf(stderr, "atl-burn: figure not sent: %s\n", sent.error().c_str());
}

std::string elapsed(Clock::time_point t0, Millis total) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0).count();
  return std::to_string(secs) + "s/" + format_duration(total);
}

namespace {

// Runs `burn(dev)` (true: that GPU passed) for every GPU at once; 1 if any failed.
template <class Burn>
int on_every_gpu(const gpu::Backend& backend, Burn burn) {
  const int devices = backend.device_count();
  std::vector<char> passed(static_cast<size_t>(devices), 0);
  std::vector<std::thread> threads;
  for (int dev = 0; dev < devices; ++dev)
    threads.emplace_back([&, dev] { passed[static_cast<size_t>(dev)] = burn(dev); });
  for (auto& t : threads) t.join();
  for (char ok : passed)
    if (!ok) return 1;
  return 0;
}

}  // namespace

// GEMM rounds until the duration is over; every round verified.
int burn_gemm(gpu::Backend& backend, const Options& o) {
  gpu::GemmConfig config;
  config.size = o.size ? o.size : (backend.name() == "cuda" ? 8192 : 512);
  config.bf16 = !o.fp32;
  config.allow_tf32 = o.tf32;
  return on_every_gpu(backend, [&](int dev) {
    gpu::GemmConfig mine = config;  // this GPU's thread adapts its own repeats
    auto t0 = Clock::now();
    int rounds = 0;
    double sum = 0;
    std::string problem;
    while (problem.empty() && (rounds == 0 || Clock::now() - t0 < o.duration)) {
      auto r = backend.gemm(dev, mine);
      ++rounds;
      if (!r) {
        problem = r.error();
        break;
      }
      sum += r->tflops;
      // About a second of GEMMs per round from now on: the GPU stays busy
      // between the progress lines.
      if (r->tflops > 0) {
        double one = 2.0 * mine.size * mine.size * mine.size / (r->tflops * 1e12);
        mine.repeats = static_cast<int>(std::clamp(1.0 / one, 1.0, 10000.0));
      }
      std::printf("%s\n", gpu::format_gemm_round({o.pod, dev, rounds, r->tflops, r->ok()},
                                                 elapsed(t0, o.duration))
                              .c_str());
      std::fflush(stdout);
      if (!r->ok()) {
        problem = std::to_string(r->differing) + " elements differ between identical GEMMs, " +
                  std::to_string(r->nans) + " NaN, " + std::to_string(r->wrong) + " wrong";
      }
    }
    std::printf("%s GPU %d (%s): gemm %.3f TFLOP/s average over %d rounds: %s%s\n", o.pod.c_str(),
                dev, backend.name().c_str(), rounds ? sum / rounds : 0.0, rounds,
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    std::fflush(stdout);
    if (rounds) report_figure(dev, "gemm_tflops", sum / rounds);
    return problem.empty();
  });
}

int burn_transfer(gpu::Backend& backend, const Options& o) {
  return on_every_gpu(backend, [&](int dev) {
    auto t0 = Clock::now();
    int rounds = 0;
    double h2d = 0, d2h = 0, both = 0;
    std::string problem;
    while (problem.empty() && (rounds == 0 || Clock::now() - t0 < o.duration)) {
      auto r = backend.transfer(dev, o.bytes);
      ++rounds;
      if (!r) {
        problem = r.error();
        break;
      }
      h2d += r->h2d_gbps;
      d2h += r->d2h_gbps;
      both += r->bidir_gbps;
      std::printf("%s\n", gpu::format_transfer_round({o.pod, dev, rounds, r->h2d_gbps, r->d2h_gbps,
                                                      r->bidir_gbps, r->d2d_gbps, r->checksum_ok},
                                                     elapsed(t0, o.duration))
                              .c_str());
      std::fflush(stdout);
      if (!r->checksum_ok) problem = "data changed on the round trip";
    }
    std::printf("%s GPU %d (%s): transfer %s H2D %.1f GB/s, D2H %.1f GB/s over %d rounds: %s%s\n",
                o.pod.c_str(), dev, backend.name().c_str(), gpu::format_burn_size(o.bytes).c_str(),
                rounds ? h2d / rounds : 0.0, rounds ? d2h / rounds : 0.0, rounds,
                problem.empty() ? "PASS" : "FAIL: ", problem.c_str());
    std::fflush(stdout);
    if (rounds) {
      report_figure(dev, "h2d_gbps", h2d / rounds);
      report_figure(dev, "d2h_gbps", d2h / rounds);
    }
    return problem.empty();
  });
}

}  // namespace atl::burn
