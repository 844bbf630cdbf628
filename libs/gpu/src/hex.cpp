#include "atl/gpu/hex.hpp"

namespace atl::gpu {

std::string hex_encode(const void* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

Expected<std::vector<unsigned char>> hex_decode(std::string_view hex) {
  if (hex.size() % 2) return make_error("hex text has an odd number of digits");
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<unsigned char> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return make_error("'" + std::string(hex.substr(2 * i, 2)) + "' is not hex");
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return out;
}

std::string format_gpu_uuid(const unsigned char* b) {
  std::string hex = hex_encode(b, 16);
  return "GPU-" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

}  // namespace atl::gpu
