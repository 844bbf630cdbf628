// Result checks for burns, gpu-burn style: repeated identical GEMMs must agree
// element for element, nothing may be NaN, and inputs whose products are exact
// must give the exact answer.
#pragma once

#include <cstdint>
#include <vector>

namespace atl::gpu {

struct Mismatches {
  std::int64_t differing = 0;  // elements that differ from the first result
  std::int64_t nans = 0;
  bool ok() const { return differing == 0 && nans == 0; }
};

Mismatches compare_results(const std::vector<float>& expected, const std::vector<float>& got);

// Inputs with small integer values (-2..2): every product and every partial
// sum of a K-long dot product is an integer far below 2^24, exact in fp32 and
// in bf16 inputs with fp32 accumulation.
void fill_exact_inputs(std::vector<float>& a, std::vector<float>& b, std::uint64_t seed);

// C = A(m x k) * B(k x n), row-major, in double: the reference.
void reference_gemm(const std::vector<float>& a, const std::vector<float>& b,
                    std::vector<double>& c, int m, int n, int k);

// Elements of `got` that are not exactly the reference.
std::int64_t count_wrong(const std::vector<double>& reference, const std::vector<float>& got);

// The spot check of an n x n GEMM result C = A B: its first rows (at most 16)
// against the exact double reference. Returns the wrong elements.
std::int64_t spot_check_gemm(const std::vector<float>& a, const std::vector<float>& b,
                             const std::vector<float>& c, int n);

// The spot check for random inputs: the first `rows` rows of C = A B (n x n)
// against a double reference, each element within `tolerance` times the sum
// of its products' magnitudes (fp32 accumulation of K products errs by at
// most about K * 2^-24 of that sum). Returns the elements outside it.
std::int64_t spot_check_gemm_tolerant(const std::vector<float>& a_rows, const std::vector<float>& b,
                                      const std::vector<float>& c_rows, int n, int rows,
                                      double tolerance = 2e-3);

// Elements of a known-answer run (element i computed from index i) that are
// not known_answer(i, kKnownAnswerSeed, kKnownAnswerRounds).
std::int64_t count_known_answer_errors(const std::vector<std::uint32_t>& got);

}  // namespace atl::gpu
