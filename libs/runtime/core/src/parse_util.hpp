// Small helpers shared by the core parsers (private to atl_core).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

// `s` in quotes for an error line: bytes that are not printable ASCII as \xNN,
// and at most 64 characters of it (an error never echoes megabytes).
inline std::string quote(std::string_view s) {
  static constexpr size_t kMax = 64;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > kMax) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out + "'";
}

}  // namespace atl::detail
