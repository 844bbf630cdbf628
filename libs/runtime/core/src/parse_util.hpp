// Small helpers shared by the core parsers (private to atl_core).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "atl/core/quote.hpp"

namespace atl::detail {

// Non-negative decimal integer with no sign, spaces or trailing junk.
inline std::optional<std::int64_t> parse_uint(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

using atl::quote;

}  // namespace atl::detail
