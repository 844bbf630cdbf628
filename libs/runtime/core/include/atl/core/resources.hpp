// Resources as Ray counts them: named amounts ("CPU", "GPU", "memory", "shm"
// and any custom name a node advertises), fractional down to 1/10000.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

// Amounts are fixed point (Ray does the same): 1.0 is kResourceUnit, so
// reserving and freeing 0.1 GPU a thousand times leaves exactly what was there.
inline constexpr std::int64_t kResourceUnit = 10000;

// name -> amount in 1/kResourceUnit; an absent name is 0.
using Resources = std::map<std::string, std::int64_t>;

// The standard names. Memory and shm are in bytes.
inline constexpr const char* kCpu = "CPU";
inline constexpr const char* kGpu = "GPU";
inline constexpr const char* kMemory = "memory";
inline constexpr const char* kShm = "shm";

// A JSON object of name -> non-negative number ('{"disk_ssd": 1, "GPU": 0.5}').
// Names: letters, digits, '_', '-', '.', ':' (at most 64). Amounts: finite,
// >= 0, at most 1e15, a multiple of 1/10000. An error names the bad entry.
Expected<Resources> parse_resources(std::string_view json_text);

// A bundle: as above, but at least one amount must be above 0 (an empty
// bundle reserves nothing and could not be told apart from a mistake).
Expected<Resources> parse_bundle(std::string_view json_text);

// A node's resources from what it registered with (custom ones on top).
Resources node_resources(int cpus, int gpus, std::int64_t memory, std::int64_t shm,
                         const Resources& custom);

// {"CPU": 2, "GPU": 0.5}: amounts as numbers, zeros left out.
std::string format_resources(const Resources& r);
// One amount as a number ("0.5", "8").
std::string format_amount(std::int64_t units);

// a + b, a - b (entries that reach 0 stay, so used/total stays readable).
Resources add(const Resources& a, const Resources& b);
Resources subtract(const Resources& a, const Resources& b);
// Every amount of `need` is within `have`.
bool fits(const Resources& need, const Resources& have);
// The first name `need` wants more of than `have` holds, or "" if it fits.
std::string first_shortfall(const Resources& need, const Resources& have);

}  // namespace atl
