#include "atl/core/log_times.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace atl {

namespace {

void put_i64(std::string& out, std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
}

std::int64_t get_i64(std::string_view in) {
  std::uint64_t u = 0;
  for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<unsigned char>(in[i]);
  return static_cast<std::int64_t>(u);
}

}  // namespace

std::string encode_log_time(const LogTime& t) {
  std::string out;
  out.reserve(kLogTimeRecordSize);
  put_i64(out, t.offset);
  put_i64(out, t.unix_ms);
  return out;
}

std::vector<LogTime> decode_log_times(std::string_view bytes) {
  std::vector<LogTime> out;
  out.reserve(bytes.size() / kLogTimeRecordSize);
  for (std::size_t at = 0; at + kLogTimeRecordSize <= bytes.size(); at += kLogTimeRecordSize) {
    LogTime t{get_i64(bytes.substr(at, 8)), get_i64(bytes.substr(at + 8, 8))};
    if (t.offset < 0 || (!out.empty() && t.offset < out.back().offset)) continue;
    out.push_back(t);
  }
  return out;
}

std::int64_t log_offset_since(const std::vector<LogTime>& times, std::int64_t since_ms) {
  // Times only grow with offsets (one writer, one clock; a step back of the
  // wall clock is taken as it is): the first record at or after since_ms.
  for (const auto& t : times)
    if (t.unix_ms >= since_ms) return t.offset;
  return -1;
}

std::int64_t log_time_at(const std::vector<LogTime>& times, std::int64_t offset) {
  auto it = std::upper_bound(times.begin(), times.end(), offset,
                             [](std::int64_t o, const LogTime& t) { return o < t.offset; });
  return it == times.begin() ? 0 : std::prev(it)->unix_ms;
}

std::string format_utc_ms(std::int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char out[80];  // room for any int the compiler can imagine in each field
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return out;
}

std::string stamp_log_lines(std::string_view bytes, std::int64_t start,
                            const std::vector<LogTime>& times) {
  std::string out;
  out.reserve(bytes.size() + (bytes.size() / 40 + 1) * 25);
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::size_t nl = bytes.find('\n', at);
    std::size_t end = nl == std::string_view::npos ? bytes.size() : nl + 1;
    std::int64_t ms = log_time_at(times, start + static_cast<std::int64_t>(at));
    out += ms > 0 ? format_utc_ms(ms) : std::string("-");
    out += ' ';
    out.append(bytes.substr(at, end - at));
    at = end;
  }
  return out;
}

}  // namespace atl
