// atl's own CUDA kernels (kernels.cu, compiled by nvcc), callable from plain
// C++: no CUDA types here, streams pass as void*, results as cudaError_t ints.
#pragma once

#include <cstdint>

namespace atl::gpu::kernels {

// out[i] = known_answer(i, seed, rounds) for i < n.
int known_answer(std::uint32_t* out, std::int64_t n, std::uint32_t seed, int rounds, void* stream);

// data[i] = ring_input(rank, i, round) for i < n.
int fill_ring_input(float* data, std::int64_t n, int rank, int round, void* stream);

// Adds to *wrong (device memory) the count of i < n with data[i] != ring_sum(world, i, round).
int count_wrong_sums(const float* data, std::int64_t n, int world, int round,
                     unsigned long long* wrong, void* stream);

// words[i] = memory_pattern(pass, i) for i < n.
int fill_memory_pattern(std::uint32_t* words, std::int64_t n, int pass, void* stream);

// Adds to *bad (device memory) the count of i < n with words[i] != memory_pattern(pass, i).
int count_memory_errors(const std::uint32_t* words, std::int64_t n, int pass,
                        unsigned long long* bad, void* stream);

// out[i] = random_unit(seed, i) (device_math.hpp), as bf16 bits or as float.
int fill_random_bf16(std::uint16_t* out, std::int64_t n, std::uint64_t seed, void* stream);
int fill_random_f32(float* out, std::int64_t n, std::uint64_t seed, void* stream);

// Compares got[i] with ref[i] bit for bit for i < n: counts[0] += elements
// that differ, counts[1] += NaNs in got (device memory, two counters).
int count_differences(const float* got, const float* ref, std::int64_t n,
                      unsigned long long* counts, void* stream);

}  // namespace atl::gpu::kernels
