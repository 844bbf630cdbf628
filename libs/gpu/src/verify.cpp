#include "atl/gpu/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/device_math.hpp"

namespace atl::gpu {

Mismatches compare_results(const std::vector<float>& expected, const std::vector<float>& got) {
  Mismatches m;
  size_t n = std::min(expected.size(), got.size());
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(got[i])) {
      ++m.nans;
    } else if (std::memcmp(&expected[i], &got[i], sizeof(float)) != 0) {
      ++m.differing;  // bitwise: identical GEMMs must give identical bits
    }
  }
  m.differing += static_cast<std::int64_t>(std::max(expected.size(), got.size()) - n);
  return m;
}

void fill_exact_inputs(std::vector<float>& a, std::vector<float>& b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(-2, 2);
  for (auto& x : a) x = static_cast<float>(pick(rng));
  for (auto& x : b) x = static_cast<float>(pick(rng));
}

void reference_gemm(const std::vector<float>& a, const std::vector<float>& b,
                    std::vector<double>& c, int m, int n, int k) {
  c.assign(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p) {
      double av = a[static_cast<size_t>(i) * k + p];
      const float* brow = &b[static_cast<size_t>(p) * n];
      double* crow = &c[static_cast<size_t>(i) * n];
      for (int j = 0; j < n; ++j) crow[j] += av * brow[j];
    }
}

std::int64_t count_wrong(const std::vector<double>& reference, const std::vector<float>& got) {
  std::int64_t wrong = 0;
  for (size_t i = 0; i < reference.size() && i < got.size(); ++i)
    wrong += static_cast<double>(got[i]) != reference[i];
  return wrong;
}

std::int64_t spot_check_gemm(const std::vector<float>& a, const std::vector<float>& b,
                             const std::vector<float>& c, int n) {
  const int rows = std::min(n, 16);
  const auto cells = static_cast<long>(rows) * n;
  std::vector<float> a_top(a.begin(), a.begin() + cells);
  std::vector<double> ref;
  reference_gemm(a_top, b, ref, rows, n, n);
  return count_wrong(ref, std::vector<float>(c.begin(), c.begin() + cells));
}

std::int64_t count_known_answer_errors(const std::vector<std::uint32_t>& got) {
  std::int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    wrong +=
        got[i] != known_answer(static_cast<std::uint32_t>(i), kKnownAnswerSeed, kKnownAnswerRounds);
  return wrong;
}

std::int64_t spot_check_gemm_tolerant(const std::vector<float>& a_rows, const std::vector<float>& b,
                                      const std::vector<float>& c_rows, int n, int rows,
                                      double tolerance) {
  std::int64_t wrong = 0;
  const auto nn = static_cast<size_t>(n);
  std::vector<double> exact(nn), magnitude(nn);
  for (int i = 0; i < rows; ++i) {
    std::fill(exact.begin(), exact.end(), 0.0);
    std::fill(magnitude.begin(), magnitude.end(), 0.0);
    for (size_t p = 0; p < nn; ++p) {
      const double av = a_rows[static_cast<size_t>(i) * nn + p];
      const float* brow = &b[p * nn];
      for (size_t j = 0; j < nn; ++j) {
        exact[j] += av * brow[j];
        magnitude[j] += std::fabs(av * brow[j]);
      }
    }
    for (size_t j = 0; j < nn; ++j) {
      const double got = c_rows[static_cast<size_t>(i) * nn + j];
      // NaN fails the comparison too.
      if (!(std::fabs(got - exact[j]) <= tolerance * magnitude[j] + 1e-30)) ++wrong;
    }
  }
  return wrong;
}

}  // namespace atl::gpu
