// Byte sizes as Kubernetes resources write them: "512Mi", "16Gi", "1G", "1024".
// Suffixes with "i" are powers of 1024; K, M, G, T without "i" are powers of 1000.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

Expected<std::int64_t> parse_byte_size(std::string_view text);

// Human rendering with binary units: 1073741824 -> "1Gi", 1536 -> "1.5Ki".
std::string format_byte_size(std::int64_t bytes);

}  // namespace atl
