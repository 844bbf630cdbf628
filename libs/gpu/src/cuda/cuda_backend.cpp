// The CUDA implementation: cuBLAS GEMM (bf16 inputs, fp32 accumulate, or
// fp32/tf32) timed with CUDA events and checked like gpu-burn on the device,
// pinned host <-> device and D2D copies, a memory test and the known-answer
// kernel (atl's kernels: kernels.cu). Built only when CMake finds the CUDA
// toolkit; chosen at run time only when a device answers.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/device_math.hpp"
#include "atl/gpu/hex.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/verify.hpp"
#include "kernels.hpp"

namespace atl::gpu {

namespace {

std::string cuda_error(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

#define ATL_CUDA(call)                                                   \
  do {                                                                   \
    cudaError_t err_ = (call);                                           \
    if (err_ != cudaSuccess) return make_error(cuda_error(#call, err_)); \
  } while (0)

#define ATL_CUBLAS(call)                                                                \
  do {                                                                                  \
    cublasStatus_t st_ = (call);                                                        \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                   \
      return make_error(std::string(#call) + ": cuBLAS status " + std::to_string(st_)); \
  } while (0)

// Device memory freed on scope exit, whatever path returns.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};
struct PinnedBuffer {
  void* ptr = nullptr;
  ~PinnedBuffer() {
    if (ptr) cudaFreeHost(ptr);
  }
};
struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};
struct Handle {
  cublasHandle_t h = nullptr;
  ~Handle() {
    if (h) cublasDestroy(h);
  }
};

// bf16 keeps the top 16 bits of an fp32: exact for the small integers we use.
std::vector<std::uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_bf16_bits(v[i]);
  return out;
}

// One device's GEMM inputs, reference result, result buffers and cuBLAS
// handle, kept across rounds (only that device's burn thread touches it).
struct GemmState {
  int size = 0;
  bool bf16 = true, tf32 = false, random = true;
  double fraction = 0;
  DeviceBuffer a, b, ref, results, counts, workspace;
  std::int64_t slots = 1;  // result matrices in `results`, written round-robin
  std::int64_t next_slot = 0;
  Handle handle;
  std::vector<cudaEvent_t> events;   // start/stop of each timed repeat
  std::int64_t reference_wrong = 0;  // elements of the reference off the exact answer
  ~GemmState() {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
  bool matches(const GemmConfig& c) const {
    return size == c.size && bf16 == c.bf16 && tf32 == c.allow_tf32 && random == c.random_inputs &&
           fraction == c.result_memory_fraction;
  }
  size_t out_bytes() const { return static_cast<size_t>(size) * size * 4; }
  void* slot(std::int64_t k) const {
    return static_cast<char*>(results.ptr) + static_cast<size_t>(k) * out_bytes();
  }
};

// cuBLAS is column-major: C^T = B^T A^T, so B goes first to get row-major C = A B.
cublasStatus_t run_gemm(GemmState& g, void* out) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType in_type = g.bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      g.bf16 ? CUBLAS_COMPUTE_32F : (g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  return cublasGemmEx(g.handle.h, CUBLAS_OP_N, CUBLAS_OP_N, g.size, g.size, g.size, &alpha, g.b.ptr,
                      in_type, g.size, g.a.ptr, in_type, g.size, &beta, out, CUDA_R_32F, g.size,
                      compute, CUBLAS_GEMM_DEFAULT);
}

// Rows of an n-wide input on the device, as floats on the host.
Expected<std::vector<float>> read_rows(const GemmState& g, const void* m, int rows) {
  const size_t count = static_cast<size_t>(rows) * g.size;
  std::vector<float> out(count);
  if (g.bf16) {
    std::vector<std::uint16_t> bits(count);
    ATL_CUDA(cudaMemcpy(bits.data(), m, count * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) out[i] = from_bf16_bits(bits[i]);
  } else {
    ATL_CUDA(cudaMemcpy(out.data(), m, count * 4, cudaMemcpyDeviceToHost));
  }
  return out;
}

Expected<std::unique_ptr<GemmState>> make_gemm_state(const GemmConfig& config) {
  auto g = std::make_unique<GemmState>();
  g->size = config.size;
  g->bf16 = config.bf16;
  g->tf32 = config.allow_tf32;
  g->random = config.random_inputs;
  g->fraction = config.result_memory_fraction;
  const int n = config.size;
  const size_t elems = static_cast<size_t>(n) * n;
  const size_t in_bytes = elems * (config.bf16 ? 2 : 4);
  ATL_CUDA(cudaMalloc(&g->a.ptr, in_bytes));
  ATL_CUDA(cudaMalloc(&g->b.ptr, in_bytes));
  ATL_CUDA(cudaMalloc(&g->ref.ptr, elems * 4));
  ATL_CUDA(cudaMalloc(&g->counts.ptr, 2 * sizeof(unsigned long long)));
  std::vector<float> a, b;  // exact inputs: kept for the spot check
  if (config.random_inputs) {
    // Filled on the device (gigabytes at 8192 and up); a and b differ by seed.
    const auto count = static_cast<std::int64_t>(elems);
    auto fill = [&](void* m, std::uint64_t seed) {
      return static_cast<cudaError_t>(
          config.bf16
              ? kernels::fill_random_bf16(static_cast<std::uint16_t*>(m), count, seed, nullptr)
              : kernels::fill_random_f32(static_cast<float*>(m), count, seed, nullptr));
    };
    if (cudaError_t e = fill(g->a.ptr, 1); e != cudaSuccess)
      return make_error(cuda_error("random input kernel", e));
    if (cudaError_t e = fill(g->b.ptr, 2); e != cudaSuccess)
      return make_error(cuda_error("random input kernel", e));
  } else {
    a.resize(elems);
    b.resize(elems);
    fill_exact_inputs(a, b, 42);
    if (config.bf16) {
      auto a16 = to_bf16(a), b16 = to_bf16(b);
      ATL_CUDA(cudaMemcpy(g->a.ptr, a16.data(), in_bytes, cudaMemcpyHostToDevice));
      ATL_CUDA(cudaMemcpy(g->b.ptr, b16.data(), in_bytes, cudaMemcpyHostToDevice));
    } else {
      ATL_CUDA(cudaMemcpy(g->a.ptr, a.data(), in_bytes, cudaMemcpyHostToDevice));
      ATL_CUDA(cudaMemcpy(g->b.ptr, b.data(), in_bytes, cudaMemcpyHostToDevice));
    }
  }
  ATL_CUBLAS(cublasCreate(&g->handle.h));
  // cuBLAS's advice for Hopper: a 32 MiB workspace (more kernels to choose
  // from; frameworks give it one too).
  constexpr size_t kWorkspace = 32u << 20;
  ATL_CUDA(cudaMalloc(&g->workspace.ptr, kWorkspace));
  ATL_CUBLAS(cublasSetWorkspace(g->handle.h, g->workspace.ptr, kWorkspace));
  ATL_CUBLAS(run_gemm(*g, g->ref.ptr));  // the reference every repeat must match bit for bit
  ATL_CUDA(cudaDeviceSynchronize());
  // Its first rows against a double reference: exact for exact inputs,
  // within fp32 accumulation's bound for random ones.
  const int rows = std::min(n, config.random_inputs ? 2 : 16);
  std::vector<float> top(static_cast<size_t>(rows) * n);
  ATL_CUDA(cudaMemcpy(top.data(), g->ref.ptr, top.size() * 4, cudaMemcpyDeviceToHost));
  if (config.random_inputs) {
    auto a_rows = read_rows(*g, g->a.ptr, rows);
    if (!a_rows) return Error{a_rows.error()};
    auto b_all = read_rows(*g, g->b.ptr, n);
    if (!b_all) return Error{b_all.error()};
    g->reference_wrong = spot_check_gemm_tolerant(*a_rows, *b_all, top, n, rows);
  } else {
    g->reference_wrong = spot_check_gemm(a, b, top, n);
  }
  // The results: one matrix, or as many as fit in the asked share of what
  // is free now (fragmentation: settle for a few less).
  std::int64_t slots = 1;
  if (config.result_memory_fraction > 0) {
    size_t free_bytes = 0, total = 0;
    ATL_CUDA(cudaMemGetInfo(&free_bytes, &total));
    slots = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(static_cast<double>(free_bytes) *
                                     config.result_memory_fraction / g->out_bytes()));
  }
  while (slots > 1 &&
         cudaMalloc(&g->results.ptr, static_cast<size_t>(slots) * g->out_bytes()) != cudaSuccess) {
    cudaGetLastError();
    slots = slots * 9 / 10;
  }
  if (!g->results.ptr) {
    slots = 1;
    ATL_CUDA(cudaMalloc(&g->results.ptr, g->out_bytes()));
  }
  g->slots = slots;
  return g;
}

// The GEMM repeats as timing.hpp's TimedWork: each result goes to the next
// slot and is compared with the reference by a kernel right after (outside
// the timed window: the events bracket the GEMM alone).
class GemmWork : public TimedWork {
 public:
  explicit GemmWork(GemmState& g) : g_(g) {}
  Status untimed(int count) override {
    for (int r = 0; r < count; ++r)
      if (auto s = one(); !s) return s;
    ATL_CUDA(cudaDeviceSynchronize());
    return Ok{};
  }
  Expected<std::vector<double>> timed(int count) override {
    while (static_cast<int>(g_.events.size()) < 2 * count) {
      cudaEvent_t e = nullptr;
      ATL_CUDA(cudaEventCreate(&e));
      g_.events.push_back(e);
    }
    for (int r = 0; r < count; ++r) {
      ATL_CUDA(cudaEventRecord(g_.events[2 * r]));
      void* out = g_.slot(g_.next_slot);
      ATL_CUBLAS(run_gemm(g_, out));
      ATL_CUDA(cudaEventRecord(g_.events[2 * r + 1]));
      if (auto s = compare(out); !s) return Error{s.error()};
    }
    ATL_CUDA(cudaDeviceSynchronize());
    std::vector<double> seconds;
    for (int r = 0; r < count; ++r) {
      float ms = 0;
      ATL_CUDA(cudaEventElapsedTime(&ms, g_.events[2 * r], g_.events[2 * r + 1]));
      seconds.push_back(ms / 1000.0);
    }
    return seconds;
  }

 private:
  Status one() {
    void* out = g_.slot(g_.next_slot);
    ATL_CUBLAS(run_gemm(g_, out));
    return compare(out);
  }
  Status compare(void* out) {
    const auto elems = static_cast<std::int64_t>(g_.size) * g_.size;
    g_.next_slot = (g_.next_slot + 1) % g_.slots;
    auto e = static_cast<cudaError_t>(kernels::count_differences(
        static_cast<const float*>(out), static_cast<const float*>(g_.ref.ptr), elems,
        static_cast<unsigned long long*>(g_.counts.ptr), nullptr));
    if (e != cudaSuccess) return make_error(cuda_error("compare kernel", e));
    return Ok{};
  }
  GemmState& g_;
};

// One device's pinned and device buffers for the copy tests, kept across rounds.
constexpr int kTransferCopies = 8;
struct TransferState {
  std::int64_t bytes = 0;
  int round = 0;
  PinnedBuffer host, back;
  DeviceBuffer dev, dev2;
  Events ev;
  cudaStream_t up = nullptr, down = nullptr;
  ~TransferState() {
    if (up) cudaStreamDestroy(up);
    if (down) cudaStreamDestroy(down);
  }
};

Expected<std::unique_ptr<TransferState>> make_transfer_state(std::int64_t bytes) {
  auto t = std::make_unique<TransferState>();
  t->bytes = bytes;
  const size_t n = static_cast<size_t>(bytes);
  ATL_CUDA(cudaMallocHost(&t->host.ptr, n));
  ATL_CUDA(cudaMallocHost(&t->back.ptr, n));
  ATL_CUDA(cudaMalloc(&t->dev.ptr, n));
  ATL_CUDA(cudaMalloc(&t->dev2.ptr, n));
  ATL_CUDA(cudaEventCreate(&t->ev.start));
  ATL_CUDA(cudaEventCreate(&t->ev.stop));
  ATL_CUDA(cudaStreamCreateWithFlags(&t->up, cudaStreamNonBlocking));
  ATL_CUDA(cudaStreamCreateWithFlags(&t->down, cudaStreamNonBlocking));
  auto* h = static_cast<unsigned char*>(t->host.ptr);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<unsigned char>(i * 131 + 7);
  return t;
}

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int devices)
      : devices_(devices),
        gemm_states_(static_cast<size_t>(devices)),
        transfer_states_(static_cast<size_t>(devices)) {}
  std::string name() const override { return "cuda"; }
  int device_count() const override { return devices_; }
  std::string pci_bus_id(int device) const override {
    char id[32] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) return "";
    return id;
  }
  std::string uuid(int device) const override {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
    return format_gpu_uuid(reinterpret_cast<const unsigned char*>(prop.uuid.bytes));
  }

  // gpu-burn's scheme: the inputs go to the GPU once per device and
  // configuration; the first result (spot-checked against a double
  // reference) is the reference; every repeat after it - warm-up ones too -
  // is compared with it bit for bit by a kernel, so only two counters come
  // back. Timing: config.warmup of untimed GEMMs, then `repeats` timed one
  // by one with events; the median gives the TFLOP/s.
  Expected<GemmResult> gemm(int device, const GemmConfig& config) override {
    if (device < 0 || device >= devices_)
      return make_error("no CUDA device " + std::to_string(device));
    if (config.size < 1) return make_error("gemm: size must be positive");
    ATL_CUDA(cudaSetDevice(device));
    auto& slot = gemm_states_[static_cast<size_t>(device)];
    if (!slot || !slot->matches(config)) {
      slot.reset();
      auto fresh = make_gemm_state(config);
      if (!fresh) return Error{fresh.error()};
      slot = std::move(*fresh);
    }
    GemmState& g = *slot;
    const int n = config.size;
    auto* counts = static_cast<unsigned long long*>(g.counts.ptr);
    ATL_CUDA(cudaMemset(counts, 0, 2 * sizeof *counts));
    GemmWork work(g);
    TimingPlan plan;
    plan.warmup = config.warmup;
    plan.warmup_iterations = 0;
    plan.iterations = std::max(1, config.repeats);
    auto timing = measure(work, plan);
    if (!timing) return Error{timing.error()};
    unsigned long long host_counts[2] = {0, 0};
    ATL_CUDA(cudaMemcpy(host_counts, counts, sizeof host_counts, cudaMemcpyDeviceToHost));
    GemmResult result;
    result.device = device;
    result.timing = *timing;
    result.tflops = gemm_tflops(n, n, n, timing->median);
    result.differing = static_cast<std::int64_t>(host_counts[0]);
    result.nans = static_cast<std::int64_t>(host_counts[1]);
    result.wrong = g.reference_wrong;
    result.result_bytes = g.slots * static_cast<std::int64_t>(g.out_bytes());
    return result;
  }

  // Pinned buffers stay allocated per device and size across rounds; each
  // round marks the host data anew (a byte every 4 KiB) so a copy that did
  // not happen cannot pass on last round's bytes. Each direction copies
  // kTransferCopies times back to back between one pair of events.
  Expected<TransferResult> transfer(int device, std::int64_t bytes) override {
    if (device < 0 || device >= devices_)
      return make_error("no CUDA device " + std::to_string(device));
    if (bytes < 2) return make_error("transfer: size must be at least 2 bytes");
    ATL_CUDA(cudaSetDevice(device));
    auto& slot = transfer_states_[static_cast<size_t>(device)];
    if (!slot || slot->bytes != bytes) {
      slot.reset();
      auto fresh = make_transfer_state(bytes);
      if (!fresh) return Error{fresh.error()};
      slot = std::move(*fresh);
    }
    TransferState& t = *slot;
    const size_t n = static_cast<size_t>(bytes);
    auto* h = static_cast<unsigned char*>(t.host.ptr);
    ++t.round;
    for (size_t i = 0; i < n; i += 4096) h[i] = static_cast<unsigned char>(i * 131 + 7 + t.round);
    // Each direction: one untimed copy (first touch of the pinned pages and
    // the link's wake-up from its idle generation), then kTransferCopies
    // back to back between one pair of events. Every call's status is checked.
    auto timed = [&](const char* what, cudaStream_t stream, auto&& copy) -> Expected<double> {
      if (cudaError_t e = copy(); e != cudaSuccess) return make_error(cuda_error(what, e));
      ATL_CUDA(cudaEventRecord(t.ev.start, stream));
      for (int c = 0; c < kTransferCopies; ++c)
        if (cudaError_t e = copy(); e != cudaSuccess) return make_error(cuda_error(what, e));
      ATL_CUDA(cudaEventRecord(t.ev.stop, stream));
      ATL_CUDA(cudaEventSynchronize(t.ev.stop));
      float ms = 0;
      ATL_CUDA(cudaEventElapsedTime(&ms, t.ev.start, t.ev.stop));
      return ms / 1000.0;
    };
    TransferResult r;
    r.device = device;
    r.bytes = bytes;
    const std::int64_t moved = bytes * kTransferCopies;
    auto h2d = timed("cudaMemcpyAsync host to device", t.up, [&] {
      return cudaMemcpyAsync(t.dev.ptr, h, n, cudaMemcpyHostToDevice, t.up);
    });
    if (!h2d) return Error{h2d.error()};
    auto d2h = timed("cudaMemcpyAsync device to host", t.up, [&] {
      return cudaMemcpyAsync(t.back.ptr, t.dev.ptr, n, cudaMemcpyDeviceToHost, t.up);
    });
    if (!d2h) return Error{d2h.error()};
    ATL_CUDA(cudaStreamSynchronize(t.up));
    r.h2d_gbps = algbw_gbps(moved, *h2d);
    r.d2h_gbps = algbw_gbps(moved, *d2h);
    r.checksum_ok = std::memcmp(h, t.back.ptr, n) == 0;
    auto d2d = timed("cudaMemcpyAsync device to device", t.up, [&] {
      return cudaMemcpyAsync(t.dev2.ptr, t.dev.ptr, n, cudaMemcpyDeviceToDevice, t.up);
    });
    if (!d2d) return Error{d2d.error()};
    r.d2d_gbps = algbw_gbps(moved, *d2d);
    std::memset(t.back.ptr, 0, n);
    ATL_CUDA(cudaMemcpyAsync(t.back.ptr, t.dev2.ptr, n, cudaMemcpyDeviceToHost, t.up));
    ATL_CUDA(cudaStreamSynchronize(t.up));
    r.checksum_ok = r.checksum_ok && std::memcmp(h, t.back.ptr, n) == 0;
    // Both directions at once on two streams (host clock: two streams' events
    // do not bound one window).
    auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < kTransferCopies; ++c) {
      ATL_CUDA(cudaMemcpyAsync(t.dev2.ptr, h, n, cudaMemcpyHostToDevice, t.up));
      ATL_CUDA(cudaMemcpyAsync(t.back.ptr, t.dev.ptr, n, cudaMemcpyDeviceToHost, t.down));
    }
    cudaError_t s1 = cudaStreamSynchronize(t.up), s2 = cudaStreamSynchronize(t.down);
    double both = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s1 != cudaSuccess) return make_error(cuda_error("bidirectional copy", s1));
    if (s2 != cudaSuccess) return make_error(cuda_error("bidirectional copy", s2));
    r.bidir_gbps = algbw_gbps(2 * moved, both);
    return r;
  }

  // Each pattern over most of the free memory, written and compared by
  // kernels at device bandwidth: only the count of bad words crosses PCIe
  // (copying 100+ GiB back per pattern would take minutes per GPU).
  Expected<MemoryTestResult> memory_test(int device, double fraction) override {
    if (device < 0 || device >= devices_)
      return make_error("no CUDA device " + std::to_string(device));
    if (fraction <= 0 || fraction > 1) return make_error("memory test: fraction must be in (0, 1]");
    ATL_CUDA(cudaSetDevice(device));
    DeviceBuffer counter;
    ATL_CUDA(cudaMalloc(&counter.ptr, sizeof(unsigned long long)));
    size_t free_bytes = 0, total = 0;
    ATL_CUDA(cudaMemGetInfo(&free_bytes, &total));
    size_t bytes = static_cast<size_t>(static_cast<double>(free_bytes) * fraction) & ~size_t{3};
    DeviceBuffer buf;
    while (bytes > (64u << 20) && cudaMalloc(&buf.ptr, bytes) != cudaSuccess) {
      cudaGetLastError();
      bytes = bytes / 10 * 9 & ~size_t{3};  // fragmentation: settle for a little less
    }
    if (!buf.ptr) ATL_CUDA(cudaMalloc(&buf.ptr, bytes));
    MemoryTestResult r;
    r.device = device;
    r.bytes = static_cast<std::int64_t>(bytes);
    auto* words = static_cast<std::uint32_t*>(buf.ptr);
    auto* bad = static_cast<unsigned long long*>(counter.ptr);
    const auto n = static_cast<std::int64_t>(bytes / 4);
    for (int pass = 0; pass < kMemoryPasses; ++pass) {
      ATL_CUDA(cudaMemset(bad, 0, sizeof *bad));
      auto e = static_cast<cudaError_t>(kernels::fill_memory_pattern(words, n, pass, nullptr));
      if (e == cudaSuccess)
        e = static_cast<cudaError_t>(kernels::count_memory_errors(words, n, pass, bad, nullptr));
      if (e != cudaSuccess) return make_error(cuda_error("memory test kernel", e));
      unsigned long long got = 0;
      ATL_CUDA(cudaMemcpy(&got, bad, sizeof got, cudaMemcpyDeviceToHost));
      r.bad_words += static_cast<std::int64_t>(got);
      ++r.patterns;
    }
    return r;
  }

  Expected<KnownAnswerResult> known_answer(int device, std::int64_t elements) override {
    if (device < 0 || device >= devices_)
      return make_error("no CUDA device " + std::to_string(device));
    if (elements < 1) return make_error("known answer: no elements to compute");
    ATL_CUDA(cudaSetDevice(device));
    DeviceBuffer out;
    ATL_CUDA(cudaMalloc(&out.ptr, static_cast<size_t>(elements) * 4));
    auto launched = static_cast<cudaError_t>(
        kernels::known_answer(static_cast<std::uint32_t*>(out.ptr), elements, kKnownAnswerSeed,
                              kKnownAnswerRounds, nullptr));
    if (launched != cudaSuccess) return make_error(cuda_error("known-answer kernel", launched));
    ATL_CUDA(cudaDeviceSynchronize());
    std::vector<std::uint32_t> got(static_cast<size_t>(elements));
    ATL_CUDA(cudaMemcpy(got.data(), out.ptr, got.size() * 4, cudaMemcpyDeviceToHost));
    KnownAnswerResult r;
    r.device = device;
    r.elements = elements;
    r.wrong = count_known_answer_errors(got);
    return r;
  }

 private:
  int devices_;
  std::vector<std::unique_ptr<GemmState>> gemm_states_;  // by device
  std::vector<std::unique_ptr<TransferState>> transfer_states_;
};

}  // namespace

Expected<std::unique_ptr<Backend>> make_cuda_backend() {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return make_error(cuda_error("cudaGetDeviceCount", e));
  if (count == 0) return make_error("cudaGetDeviceCount: no device");
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(count));
}

}  // namespace atl::gpu
