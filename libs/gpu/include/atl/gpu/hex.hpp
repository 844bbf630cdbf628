// Bytes as text: NCCL unique ids travel as hex, GPU UUIDs print as nvidia-smi
// prints them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::gpu {

std::string hex_encode(const void* data, size_t size);
Expected<std::vector<unsigned char>> hex_decode(std::string_view hex);
// "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits.
std::string format_gpu_uuid(const unsigned char* bytes16);

}  // namespace atl::gpu
