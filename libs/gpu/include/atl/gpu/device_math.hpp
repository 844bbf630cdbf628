// Integer-valued formulas shared by the host and the CUDA kernels: what each
// allreduce member contributes (so every sum is exact in float and checkable
// element by element) and the known-answer kernel's function. Plain inline
// code: the same lines compile for the CPU and, under nvcc, for the GPU.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ATL_HOST_DEVICE __host__ __device__
#else
#define ATL_HOST_DEVICE
#endif

namespace atl::gpu {

// The value rank `rank` contributes at element `i` in round `round`: small
// integers, so any summation order gives the exact total (for up to ~2000
// ranks: the largest sum stays far below float's 2^24 exact range).
ATL_HOST_DEVICE inline float ring_input(int rank, std::int64_t i, int round) {
  return static_cast<float>((rank + 1) * ((i + round) % 5 + 1));
}

// The exact allreduce sum of ring_input over ranks 0..world-1.
ATL_HOST_DEVICE inline float ring_sum(int world, std::int64_t i, int round) {
  return static_cast<float>(world * (world + 1) / 2 * ((i + round) % 5 + 1));
}

// The known-answer kernel's value for element i: `rounds` steps of an
// xorshift-multiply mix (integer ALUs) followed by a chain of exact float
// fused multiply-adds (the FP32 pipeline). Any difference from the host's
// answer is a broken unit, not rounding.
ATL_HOST_DEVICE inline std::uint32_t known_answer(std::uint32_t i, std::uint32_t seed, int rounds) {
  std::uint32_t x = i * 2654435761u + seed;
  for (int r = 0; r < rounds; ++r) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x = x * 747796405u + 2891336453u;
  }
  // Values below 2^12 times 3 plus 1, repeated: every step is exact in float.
  float f = static_cast<float>(x & 0xFFFu);
  for (int r = 0; r < 4; ++r) f = f * 2.0f + 1.0f;
  return x ^ static_cast<std::uint32_t>(f);
}

// A burn's random GEMM input for element i: uniform in [-1, 1) with 24
// significant bits (exact in float; bf16 keeps its top 8), from a
// splitmix64 hash of (seed, i), so the GPU fills gigabytes without the host
// and the CPU path draws the same numbers.
ATL_HOST_DEVICE inline float random_unit(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 8388608.0f) - 1.0f;  // [0, 2^24) / 2^23 - 1
}

// bf16 is an fp32's top 16 bits; rounding to nearest even, as cuBLAS's
// conversions do (NaN never occurs here: the inputs are finite).
ATL_HOST_DEVICE inline std::uint16_t to_bf16_bits(float f) {
  std::uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(f);
#else
  __builtin_memcpy(&bits, &f, sizeof bits);
#endif
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

ATL_HOST_DEVICE inline float from_bf16_bits(std::uint16_t h) {
  std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// A memory test's passes: the word written at index i in pass `pass`. Four
// constant patterns (zeros, ones, alternating bits both ways: stuck and
// coupled bits), then one that differs from address to address (address
// lines that alias two locations).
inline constexpr int kMemoryPasses = 5;
ATL_HOST_DEVICE inline std::uint32_t memory_pattern(int pass, std::uint64_t i) {
  switch (pass) {
    case 0:
      return 0x00000000u;
    case 1:
      return 0xFFFFFFFFu;
    case 2:
      return 0xAAAAAAAAu;
    case 3:
      return 0x55555555u;
    default:
      // The high half folded in: words 16 GiB apart differ too.
      return static_cast<std::uint32_t>(i ^ (i >> 32)) * 2654435761u ^ 0x9E3779B9u;
  }
}

}  // namespace atl::gpu
