// atl-gpu-bench: libs/gpu's figures on this machine, as a markdown table:
// bf16 (and tf32) GEMM TFLOP/s and pinned H2D/D2H/bidirectional copies, each
// verified. Standalone on purpose (no CAF, no Boost): it builds on a bare GPU
// machine with only CMake, a compiler and the CUDA toolkit.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "atl/gpu/backend.hpp"

int main(int argc, char** argv) {
  int size = argc > 1 ? std::atoi(argv[1]) : 8192;
  long long bytes = argc > 2 ? std::atoll(argv[2]) : (256LL << 20);
  if (size < 1 || bytes < 2) {
    std::fprintf(stderr, "usage: atl-gpu-bench [GEMM_SIZE] [COPY_BYTES]\n");
    return 2;
  }
  auto backend = atl::gpu::make_backend();
  std::printf("backend: %s, %d device(s)\n\n", backend->name().c_str(), backend->device_count());
  std::printf("| device | measure | value | verified |\n|---:|---|---:|---|\n");
  int failures = 0;
  for (int dev = 0; dev < backend->device_count(); ++dev) {
    for (bool bf16 : {true, false}) {
      atl::gpu::GemmConfig config;
      config.size = size;
      config.bf16 = bf16;
      config.allow_tf32 = !bf16;
      config.repeats = 5;
      auto g = backend->gemm(dev, config);
      if (!g) {
        std::printf("| %d | %s GEMM %d | error: %s | no |\n", dev, bf16 ? "bf16" : "tf32", size,
                    g.error().c_str());
        ++failures;
        continue;
      }
      std::printf("| %d | %s GEMM %d (TFLOP/s) | %.1f | %s |\n", dev, bf16 ? "bf16" : "tf32", size,
                  g->tflops, g->ok() ? "yes" : "NO");
      failures += !g->ok();
    }
    auto t = backend->transfer(dev, bytes);
    if (!t) {
      std::printf("| %d | copies | error: %s | no |\n", dev, t.error().c_str());
      ++failures;
      continue;
    }
    const char* ok = t->checksum_ok ? "yes" : "NO";
    std::printf("| %d | H2D pinned %lld MiB (GB/s) | %.1f | %s |\n", dev, bytes >> 20, t->h2d_gbps,
                ok);
    std::printf("| %d | D2H pinned %lld MiB (GB/s) | %.1f | %s |\n", dev, bytes >> 20, t->d2h_gbps,
                ok);
    std::printf("| %d | both ways at once (GB/s) | %.1f | %s |\n", dev, t->bidir_gbps, ok);
    failures += !t->checksum_ok;
  }
  return failures ? 1 : 0;
}
