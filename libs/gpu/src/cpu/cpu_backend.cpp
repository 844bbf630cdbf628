// The CPU implementation: a multithreaded fp32 GEMM with the same checks as
// the GPU one, and memcpy bandwidth for "transfers". CPU-only clusters get a
// meaningful burn, and every caller is testable without a GPU.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/device_math.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/verify.hpp"

namespace atl::gpu {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// C = A * B (n x n, row-major), rows split among threads. The summation order
// per element is fixed, so identical runs give identical bits.
void parallel_gemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
                   int n, int threads) {
  std::fill(c.begin(), c.end(), 0.0f);
  auto rows = [&](int lo, int hi) {
    for (int i = lo; i < hi; ++i) {
      float* crow = &c[static_cast<size_t>(i) * n];
      for (int p = 0; p < n; ++p) {
        const float av = a[static_cast<size_t>(i) * n + p];
        const float* brow = &b[static_cast<size_t>(p) * n];
        for (int j = 0; j < n; ++j) crow[j] += av * brow[j];
      }
    }
  };
  std::vector<std::thread> pool;
  int per = (n + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    int lo = t * per, hi = std::min(n, lo + per);
    if (lo < hi) pool.emplace_back(rows, lo, hi);
  }
  for (auto& th : pool) th.join();
}

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads)
      : threads_(threads > 0 ? threads
                             : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {
  }

  std::string name() const override { return "cpu"; }
  int device_count() const override { return 1; }
  std::string pci_bus_id(int) const override { return ""; }
  std::string uuid(int) const override { return ""; }

  // The GPU's scheme on the CPU: the first product is the reference, every
  // repeat after it is compared with it bit for bit; the spot check is exact
  // for exact inputs and within fp32's bound for random ones.
  Expected<GemmResult> gemm(int device, const GemmConfig& config) override {
    if (device != 0) return make_error("cpu backend has one device, not " + std::to_string(device));
    if (config.size < 1 || config.repeats < 1)
      return make_error("gemm: size and repeats must be positive");
    const int n = config.size;
    const size_t elems = static_cast<size_t>(n) * n;
    std::vector<float> a(elems), b(elems), first(elems), c(elems);
    if (config.random_inputs) {
      for (size_t i = 0; i < elems; ++i) {
        a[i] = random_unit(1, i);
        b[i] = random_unit(2, i);
      }
    } else {
      fill_exact_inputs(a, b, 42);
    }
    parallel_gemm(a, b, first, n, threads_);
    GemmResult result;
    result.nans = compare_results(first, first).nans;
    struct Work : TimedWork {
      Work(const CpuBackend& be, const std::vector<float>& a, const std::vector<float>& b,
           const std::vector<float>& first, std::vector<float>& c, int n, GemmResult& result)
          : be(be), a(a), b(b), first(first), c(c), n(n), result(result) {}
      // One product, compared with the first; the seconds it took.
      double one() {
        auto t0 = Clock::now();
        parallel_gemm(a, b, c, n, be.threads_);
        const double seconds = seconds_since(t0);
        auto m = compare_results(first, c);
        result.differing += m.differing;
        result.nans += m.nans;
        return seconds;
      }
      Status untimed(int count) override {
        for (int r = 0; r < count; ++r) one();
        return Ok{};
      }
      Expected<std::vector<double>> timed(int count) override {
        std::vector<double> seconds;
        for (int r = 0; r < count; ++r) seconds.push_back(one());
        return seconds;
      }
      const CpuBackend& be;
      const std::vector<float>&a, &b, &first;
      std::vector<float>& c;
      int n;
      GemmResult& result;
    } work(*this, a, b, first, c, n, result);
    TimingPlan plan;
    plan.warmup = config.warmup;
    plan.warmup_iterations = 0;
    plan.iterations = config.repeats;
    auto timing = measure(work, plan);
    if (!timing) return Error{timing.error()};
    result.timing = *timing;
    result.tflops = gemm_tflops(n, n, n, timing->median);
    const int rows = std::min(n, config.random_inputs ? 2 : 16);
    result.wrong = config.random_inputs ? spot_check_gemm_tolerant(a, b, first, n, rows)
                                        : spot_check_gemm(a, b, first, n);
    result.result_bytes = static_cast<std::int64_t>(elems) * 4;
    return result;
  }

  Expected<TransferResult> transfer(int device, std::int64_t bytes) override {
    if (device != 0) return make_error("cpu backend has one device, not " + std::to_string(device));
    if (bytes < 2) return make_error("transfer: size must be at least 2 bytes");
    const size_t n = static_cast<size_t>(bytes);
    std::vector<unsigned char> host(n), dev(n), back(n);
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 131 + 7);
    TransferResult r;
    r.bytes = bytes;
    auto t0 = Clock::now();
    std::memcpy(dev.data(), host.data(), n);
    r.h2d_gbps = algbw_gbps(bytes, seconds_since(t0));
    t0 = Clock::now();
    std::memcpy(back.data(), dev.data(), n);
    r.d2h_gbps = algbw_gbps(bytes, seconds_since(t0));
    r.checksum_ok = std::memcmp(host.data(), back.data(), n) == 0;
    std::vector<unsigned char> dev2(n);
    t0 = Clock::now();
    std::memcpy(dev2.data(), dev.data(), n);
    r.d2d_gbps = algbw_gbps(bytes, seconds_since(t0));
    r.checksum_ok = r.checksum_ok && std::memcmp(host.data(), dev2.data(), n) == 0;
    // Both directions at once: two threads, one per half.
    const size_t half = n / 2;
    t0 = Clock::now();
    std::thread up([&] { std::memcpy(dev.data(), host.data(), half); });
    std::memcpy(back.data() + half, dev.data() + half, n - half);
    up.join();
    r.bidir_gbps = algbw_gbps(bytes, seconds_since(t0));
    return r;
  }

  // The CPU path tests a bounded buffer (at most 256 MiB): a node's RAM is
  // shared with the ranks, unlike a parked GPU's memory.
  Expected<MemoryTestResult> memory_test(int device, double fraction) override {
    if (device != 0) return make_error("cpu backend has one device, not " + std::to_string(device));
    if (fraction <= 0 || fraction > 1) return make_error("memory test: fraction must be in (0, 1]");
    const std::int64_t bytes = static_cast<std::int64_t>((256LL << 20) * fraction) & ~3LL;
    std::vector<std::uint32_t> words(static_cast<size_t>(bytes / 4));
    MemoryTestResult r;
    r.bytes = bytes;
    for (int pass = 0; pass < kMemoryPasses; ++pass) {
      for (size_t i = 0; i < words.size(); ++i) words[i] = memory_pattern(pass, i);
      // Read back through a volatile pointer so the check is not optimised away.
      const volatile std::uint32_t* p = words.data();
      for (size_t i = 0; i < words.size(); ++i) r.bad_words += p[i] != memory_pattern(pass, i);
      ++r.patterns;
    }
    return r;
  }

  // Every core computes its share of the values; one thread recomputes them
  // all in order and compares.
  Expected<KnownAnswerResult> known_answer(int device, std::int64_t elements) override {
    if (device != 0) return make_error("cpu backend has one device, not " + std::to_string(device));
    if (elements < 1) return make_error("known answer: no elements to compute");
    std::vector<std::uint32_t> out(static_cast<size_t>(elements));
    std::vector<std::thread> pool;
    const std::int64_t per = (elements + threads_ - 1) / threads_;
    for (int t = 0; t < threads_; ++t) {
      std::int64_t lo = t * per, hi = std::min(elements, lo + per);
      if (lo >= hi) break;
      pool.emplace_back([&out, lo, hi] {
        for (std::int64_t i = lo; i < hi; ++i)
          out[static_cast<size_t>(i)] = gpu::known_answer(static_cast<std::uint32_t>(i),
                                                          kKnownAnswerSeed, kKnownAnswerRounds);
      });
    }
    for (auto& th : pool) th.join();
    KnownAnswerResult r;
    r.elements = elements;
    r.wrong = count_known_answer_errors(out);
    return r;
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace atl::gpu
