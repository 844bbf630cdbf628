#include "atl/gpu/burn_types.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "atl/core/quote.hpp"
#include "atl/core/split.hpp"

namespace atl::gpu {

Expected<BurnType> parse_burn_type(std::string_view text) {
  static constexpr std::pair<std::string_view, BurnType> kTypes[] = {
      {"gemm", BurnType::gemm},
      {"transfer", BurnType::transfer},
      {"local", BurnType::local},
      {"global", BurnType::global},
      {"batch", BurnType::batch}};
  for (const auto& [name, type] : kTypes)
    if (text == name) return type;
  return make_error("bad burn type " + quote(text) +
                    ": use gemm, transfer, local, global or batch");
}

Expected<CheckType> parse_check_type(std::string_view text) {
  if (text == "gpu") return CheckType::gpu;
  if (text == "allreduce") return CheckType::allreduce;
  if (text == "all") return CheckType::all;
  return make_error("bad check type " + quote(text) + ": use gpu, allreduce or all");
}

std::string_view to_string(BurnType type) {
  switch (type) {
    case BurnType::gemm:
      return "gemm";
    case BurnType::transfer:
      return "transfer";
    case BurnType::local:
      return "local";
    case BurnType::global:
      return "global";
    case BurnType::batch:
      return "batch";
  }
  return "unknown";
}

std::string_view to_string(CheckType type) {
  switch (type) {
    case CheckType::gpu:
      return "gpu";
    case CheckType::allreduce:
      return "allreduce";
    case CheckType::all:
      return "all";
  }
  return "unknown";
}

Expected<std::int64_t> parse_burn_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) {
    return make_error("bad size " + quote(text) + ": expected e.g. 512M or 1G");
  }
  std::int64_t n = std::stoll(std::string(text.substr(0, digits)));
  std::string_view unit = text.substr(digits);
  std::int64_t factor = 0;
  if (unit.empty() || unit == "B") factor = 1;
  if (unit == "K") factor = 1LL << 10;
  if (unit == "M") factor = 1LL << 20;
  if (unit == "G") factor = 1LL << 30;
  if (factor == 0) {
    return make_error("bad size " + quote(text) + ": unit must be K, M or G (powers of 1024)");
  }
  if (n > INT64_MAX / factor) return make_error("size " + quote(text) + " is too large");
  return n * factor;
}

std::string format_burn_size(std::int64_t bytes) {
  static constexpr std::pair<std::int64_t, const char*> kUnits[] = {
      {1LL << 30, "G"}, {1LL << 20, "M"}, {1LL << 10, "K"}};
  for (const auto& [factor, unit] : kUnits)
    if (bytes >= factor && bytes % factor == 0) return std::to_string(bytes / factor) + unit;
  return std::to_string(bytes);
}

std::vector<std::int64_t> allreduce_sizes(std::int64_t max_bytes) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t s : {512LL << 20, 1LL << 30, 2LL << 30, 4LL << 30})
    if (s <= max_bytes) sizes.push_back(s);
  return sizes;
}

std::string encode_figure(const BurnFigure& figure) {
  char value[64];
  std::snprintf(value, sizeof value, "%.6g", figure.value);
  std::string line =
      std::string(kFigureVerb) + std::to_string(figure.gpu) + " " + figure.metric + " " + value;
  if (!figure.size.empty()) line += " " + figure.size;
  if (figure.round > 0) line += " round=" + std::to_string(figure.round);
  return line;
}

Expected<BurnFigure> decode_figure(std::string_view line) {
  if (line.size() > 200) return make_error("figure: longer than 200 characters");
  std::vector<std::string> words;
  size_t start = 0;
  while (start < line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    if (end > start) words.emplace_back(line.substr(start, end - start));
    start = end + 1;
  }
  BurnFigure f;
  char* end = nullptr;
  if (words.size() > 3 && words.back().rfind("round=", 0) == 0) {
    const std::string k = words.back().substr(6);
    long round = std::strtol(k.c_str(), &end, 10);
    if (k.empty() || *end != 0 || round < 1 || round > kMaxFigureRound)
      return make_error("figure: " + quote(words.back()) + " is not round=1.." +
                        std::to_string(kMaxFigureRound));
    f.round = static_cast<int>(round);
    words.pop_back();
  }
  if (words.size() < 3 || words.size() > 4)
    return make_error("figure: expected '<gpu> <metric> <value> [<size>] [round=<k>]'");
  long gpu = std::strtol(words[0].c_str(), &end, 10);
  if (*end != 0 || words[0].empty() || gpu < 0 || gpu > 1023)
    return make_error("figure: gpu " + quote(words[0]) + " is not a number from 0 to 1023");
  f.gpu = static_cast<int>(gpu);
  f.metric = words[1];
  if (f.metric != "gemm_tflops" && f.metric != "h2d_gbps" && f.metric != "d2h_gbps" &&
      f.metric != "allreduce_busbw_gbps")
    return make_error("figure: unknown metric " + quote(f.metric));
  f.value = std::strtod(words[2].c_str(), &end);
  if (*end != 0 || words[2].empty() || !std::isfinite(f.value) || f.value < 0)
    return make_error("figure: value " + quote(words[2]) + " is not a number >= 0");
  if (words.size() == 4) {
    if (f.metric != "allreduce_busbw_gbps")
      return make_error("figure: only allreduce_busbw_gbps has a size");
    auto bytes = parse_burn_size(words[3]);
    if (!bytes) return make_error("figure: " + bytes.error());
    f.size = format_burn_size(*bytes);
  }
  return f;
}

Expected<std::vector<std::int64_t>> sweep_sizes(std::int64_t begin, std::int64_t end, int factor) {
  if (begin < 4) return make_error("-b: the smallest size is 4 bytes (one float)");
  if (end < begin) return make_error("-e: below -b");
  if (factor < 2) return make_error("-f: the factor must be 2 or more");
  std::vector<std::int64_t> sizes;
  for (std::int64_t s = begin; s <= end; s *= factor) {
    if (sizes.size() == 64) return make_error("-b/-e/-f: more than 64 sizes");
    sizes.push_back(s);
    if (s > end / factor) break;  // the next would pass end (or overflow)
  }
  return sizes;
}

// The largest size a spec takes: beyond any GPU's memory, and small enough
// that every size prints back as at most 12 digits (format_size_list).
constexpr std::int64_t kMaxSpecSize = 512LL << 30;

Expected<std::vector<std::int64_t>> parse_size_spec(std::string_view text) {
  if (text.empty()) return make_error("no sizes given");
  if (text.find(':') != std::string_view::npos) {
    const std::vector<std::string_view> parts = split_list(text, ':');
    if (parts.size() < 2 || parts.size() > 3)
      return make_error(quote(text) + ": a sweep is BEGIN:END[:FACTOR], e.g. 8M:1G:2");
    auto begin = parse_burn_size(parts[0]);
    if (!begin) return make_error("sweep begin: " + begin.error());
    auto end = parse_burn_size(parts[1]);
    if (!end) return make_error("sweep end: " + end.error());
    int factor = 2;
    if (parts.size() == 3) {
      const std::string f(parts[2]);
      if (f.empty() || f.size() > 4 || f.find_first_not_of("0123456789") != std::string::npos)
        return make_error("sweep factor " + quote(f) + " is not a small whole number");
      factor = std::stoi(f);
    }
    if (*end > kMaxSpecSize) return make_error("sweep end above 512G (no GPU holds that)");
    return sweep_sizes(*begin, *end, factor);
  }
  std::vector<std::int64_t> sizes;
  for (std::string_view item : split_list(text)) {
    auto size = parse_burn_size(item);
    if (!size) return Error{size.error()};
    if (*size < 4) return make_error("size " + quote(item) + " is below 4 bytes (one float)");
    if (*size > kMaxSpecSize) return make_error("size " + quote(item) + " is above 512G");
    if (sizes.size() == 64) return make_error("more than 64 sizes");
    sizes.push_back(*size);
  }
  return sizes;
}

std::string format_size_list(const std::vector<std::int64_t>& sizes) {
  std::string out;
  for (auto s : sizes) out += (out.empty() ? "" : ",") + format_burn_size(s);
  return out;
}

std::chrono::milliseconds node_tool_deadline(const std::vector<std::string_view>& steps,
                                             std::chrono::milliseconds duration, int sizes) {
  using std::chrono::milliseconds;
  const milliseconds watchdog(60000), grace(30000), rendezvous(600000);
  milliseconds total(0);
  for (std::string_view step : steps) {
    total += duration + watchdog + grace;
    if (step == "allreduce" || step == "local")
      total += rendezvous + watchdog * (2 * std::max(sizes, 4) + 2);
    if (step == "check") total += 4 * watchdog;  // its four phases
  }
  return total;
}

}  // namespace atl::gpu
