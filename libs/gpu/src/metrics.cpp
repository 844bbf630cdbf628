#include "atl/gpu/metrics.hpp"

#include <algorithm>
#include <cstdio>

namespace atl::gpu {

double algbw_gbps(std::int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

double allreduce_busbw_gbps(std::int64_t bytes, double seconds, int ranks) {
  if (ranks < 1) return 0;
  return algbw_gbps(bytes, seconds) * 2.0 * (ranks - 1) / ranks;
}

double gemm_tflops(std::int64_t m, std::int64_t n, std::int64_t k, double seconds) {
  return seconds > 0 ? 2.0 * static_cast<double>(m) * n * k / seconds / 1e12 : 0;
}

AllreduceFigures allreduce_figures(std::int64_t bytes, double seconds, int ranks) {
  AllreduceFigures f;
  if (ranks < 2) {
    f.note = "world size " + std::to_string(ranks) +
             ": nothing to reduce, no link crossed, no bandwidth to report";
    return f;
  }
  if (seconds <= 0) {
    f.note = "no time measured";
    return f;
  }
  f.measured = true;
  f.algbw = algbw_gbps(bytes, seconds);
  f.busbw = allreduce_busbw_gbps(bytes, seconds, ranks);
  return f;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double measured_median(const std::vector<double>& figures) {
  std::vector<double> measured;
  for (double f : figures)
    if (f > 0) measured.push_back(f);
  return median_of(std::move(measured));
}

std::vector<bool> lagging_devices(const std::vector<double>& figures, double fraction) {
  std::vector<bool> lagging(figures.size(), false);
  if (std::count_if(figures.begin(), figures.end(), [](double f) { return f > 0; }) < 2)
    return lagging;
  const double median = measured_median(figures);
  for (size_t i = 0; i < figures.size(); ++i)
    lagging[i] = figures[i] > 0 && figures[i] < fraction * median;
  return lagging;
}

std::string format_allreduce_round(int round, std::int64_t bytes, double busbw, double algbw,
                                   const std::string& master) {
  std::string size;
  if (bytes % (1LL << 30) == 0)
    size = std::to_string(bytes >> 30) + "G";
  else if (bytes % (1LL << 20) == 0)
    size = std::to_string(bytes >> 20) + "M";
  else
    size = std::to_string(bytes);
  char line[256];
  std::snprintf(line, sizeof line,
                "Round %d: AllReduce Perf(GB/s): Size=%s, BusBW=%.2f GB/s, AlgBW=%.2f GB/s, "
                "MasterAddr=%s",
                round, size.c_str(), busbw, algbw, master.c_str());
  return line;
}

}  // namespace atl::gpu
