#include "atl/core/byte_size.hpp"

#include <cstdio>
#include <utility>

#include "parse_util.hpp"

namespace atl {

Expected<std::int64_t> parse_byte_size(std::string_view text) {
  using detail::quote;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  auto number = detail::parse_uint(text.substr(0, digits));
  if (!number) return make_error("bad size " + quote(text) + ": must start with a number");
  std::string_view unit = text.substr(digits);
  constexpr std::int64_t Ki = 1024, K = 1000;
  static constexpr std::pair<std::string_view, std::int64_t> kUnits[] = {{"", 1},
                                                                         {"B", 1},
                                                                         {"K", K},
                                                                         {"k", K},
                                                                         {"M", K * K},
                                                                         {"G", K * K * K},
                                                                         {"T", K * K * K * K},
                                                                         {"Ki", Ki},
                                                                         {"Mi", Ki * Ki},
                                                                         {"Gi", Ki * Ki * Ki},
                                                                         {"Ti", Ki * Ki * Ki * Ki}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      if (*number > INT64_MAX / factor) return make_error("size " + quote(text) + " is too large");
      return *number * factor;
    }
  }
  return make_error("bad size " + quote(text) + ": unknown unit " + quote(unit) +
                    " (use K, M, G, T or Ki, Mi, Gi, Ti)");
}

std::string format_byte_size(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (v == static_cast<double>(static_cast<std::int64_t>(v)))
    std::snprintf(buf, sizeof buf, "%lld%s", static_cast<long long>(v), kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f%s", v, kUnits[u]);
  return buf;
}

}  // namespace atl
