// Durations as users write them on the command line and in job specs:
// "300ms", "20s", "5m", "10min", "2h", or a bare integer meaning seconds.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

using Millis = std::chrono::milliseconds;

// The longest duration atl takes anywhere (a year): longer ones are typos, and
// anything near INT64 milliseconds overflows a clock's time_point.
inline constexpr Millis kMaxDuration = std::chrono::hours(24 * 366);

Expected<Millis> parse_duration(std::string_view text);

// Shortest exact rendering: 1500ms -> "1500ms", 300000ms -> "5m".
std::string format_duration(Millis d);

}  // namespace atl
