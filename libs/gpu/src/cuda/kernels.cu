// atl's CUDA kernels: the known-answer check, and filling and verifying
// allreduce buffers on the device (gigabytes per GPU: the host never touches
// them). Grid-stride loops over 64-bit indices.
#include <cuda_runtime.h>

#include <atomic>

#include "atl/gpu/device_math.hpp"
#include "kernels.hpp"

namespace atl::gpu::kernels {

namespace {

constexpr int kThreads = 256;

// Each device's SM count, read once (a launch must not cost an attribute query).
constexpr int kMaxDevices = 64;
std::atomic<int> sm_counts[kMaxDevices];

int sm_count() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return 80;
  int sms = sm_counts[device].load(std::memory_order_relaxed);
  if (sms == 0) {
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        sms <= 0)
      sms = 80;
    sm_counts[device].store(sms, std::memory_order_relaxed);
  }
  return sms;
}

// Enough blocks to fill every SM several times; the loops cover the rest.
int blocks_for(std::int64_t n) {
  const int sms = sm_count();
  std::int64_t wanted = (n + kThreads - 1) / kThreads;
  std::int64_t cap = static_cast<std::int64_t>(sms) * 8;
  return static_cast<int>(wanted < cap ? (wanted > 0 ? wanted : 1) : cap);
}

__global__ void known_answer_kernel(std::uint32_t* out, std::int64_t n, std::uint32_t seed,
                                    int rounds) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = gpu::known_answer(static_cast<std::uint32_t>(i), seed, rounds);
}

__global__ void fill_kernel(float* data, std::int64_t n, int rank, int round) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data[i] = gpu::ring_input(rank, i, round);
}

__global__ void count_wrong_kernel(const float* data, std::int64_t n, int world, int round,
                                   unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    mine += data[i] != gpu::ring_sum(world, i, round);
  if (mine) atomicAdd(wrong, mine);
}

__global__ void fill_pattern_kernel(std::uint32_t* words, std::int64_t n, int pass) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    words[i] = gpu::memory_pattern(pass, static_cast<std::uint64_t>(i));
}

__global__ void count_pattern_kernel(const std::uint32_t* words, std::int64_t n, int pass,
                                     unsigned long long* bad) {
  unsigned long long mine = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    mine += words[i] != gpu::memory_pattern(pass, static_cast<std::uint64_t>(i));
  if (mine) atomicAdd(bad, mine);
}

__global__ void count_differences_kernel(const float* got, const float* ref, std::int64_t n,
                                         unsigned long long* counts) {
  unsigned long long differing = 0, nans = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = got[i];
    if (isnan(g))
      ++nans;
    else if (__float_as_uint(g) != __float_as_uint(ref[i]))
      ++differing;
  }
  if (differing) atomicAdd(&counts[0], differing);
  if (nans) atomicAdd(&counts[1], nans);
}

__global__ void fill_random_bf16_kernel(std::uint16_t* out, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = gpu::to_bf16_bits(gpu::random_unit(seed, static_cast<std::uint64_t>(i)));
}

__global__ void fill_random_f32_kernel(float* out, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = gpu::random_unit(seed, static_cast<std::uint64_t>(i));
}

}  // namespace

int fill_random_bf16(std::uint16_t* out, std::int64_t n, std::uint64_t seed, void* stream) {
  fill_random_bf16_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, n,
                                                                                             seed);
  return static_cast<int>(cudaGetLastError());
}

int fill_random_f32(float* out, std::int64_t n, std::uint64_t seed, void* stream) {
  fill_random_f32_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, n,
                                                                                            seed);
  return static_cast<int>(cudaGetLastError());
}

int count_differences(const float* got, const float* ref, std::int64_t n,
                      unsigned long long* counts, void* stream) {
  count_differences_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      got, ref, n, counts);
  return static_cast<int>(cudaGetLastError());
}

int fill_memory_pattern(std::uint32_t* words, std::int64_t n, int pass, void* stream) {
  fill_pattern_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(words, n,
                                                                                         pass);
  return static_cast<int>(cudaGetLastError());
}

int count_memory_errors(const std::uint32_t* words, std::int64_t n, int pass,
                        unsigned long long* bad, void* stream) {
  count_pattern_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      words, n, pass, bad);
  return static_cast<int>(cudaGetLastError());
}

int known_answer(std::uint32_t* out, std::int64_t n, std::uint32_t seed, int rounds, void* stream) {
  known_answer_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      out, n, seed, rounds);
  return static_cast<int>(cudaGetLastError());
}

int fill_ring_input(float* data, std::int64_t n, int rank, int round, void* stream) {
  fill_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(data, n, rank,
                                                                                 round);
  return static_cast<int>(cudaGetLastError());
}

int count_wrong_sums(const float* data, std::int64_t n, int world, int round,
                     unsigned long long* wrong, void* stream) {
  count_wrong_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      data, n, world, round, wrong);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace atl::gpu::kernels
