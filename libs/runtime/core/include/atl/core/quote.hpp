// quote(): a piece of outside input as an error line may show it.
// Every parser's error goes through it, so no error echoes megabytes or control bytes.
#pragma once

#include <string>
#include <string_view>

namespace atl {

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

}  // namespace atl
