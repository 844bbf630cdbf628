#include "atl/core/duration.hpp"

#include <utility>

#include "parse_util.hpp"

namespace atl {

Expected<Millis> parse_duration(std::string_view text) {
  using detail::quote;
  if (text.empty()) return make_error("empty duration (expected e.g. 20s, 5m, 10min)");
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  auto number = detail::parse_uint(text.substr(0, digits));
  if (!number) return make_error("bad duration " + quote(text) + ": must start with a number");
  std::string_view unit = text.substr(digits);
  // A bare number is refused: "grace 10" could mean 10 ms or 10 min.
  if (digits == text.size() && text != "0")
    return make_error("bad duration " + quote(text) + ": give a unit (ms, s, m, min or h), e.g. " +
                      std::string(text) + "s");
  static constexpr std::pair<std::string_view, std::int64_t> kUnits[] = {
      {"", 1},      {"ms", 1},      {"s", 1000},    {"sec", 1000},
      {"m", 60000}, {"min", 60000}, {"h", 3600000}, {"hr", 3600000}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      if (*number > kMaxDuration.count() / factor)
        return make_error("duration " + quote(text) + " is too long (at most " +
                          format_duration(kMaxDuration) + ")");
      return Millis(*number * factor);
    }
  }
  return make_error("bad duration " + quote(text) + ": unknown unit " + quote(unit) +
                    " (use ms, s, m, min or h)");
}

std::string format_duration(Millis d) {
  auto ms = d.count();
  if (ms != 0 && ms % 3600000 == 0) return std::to_string(ms / 3600000) + "h";
  if (ms != 0 && ms % 60000 == 0) return std::to_string(ms / 60000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace atl
