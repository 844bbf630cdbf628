// When each line of a log arrived, kept beside the log and not in it: the
// rank's bytes stay exactly as it wrote them (a file a user greps or parses),
// and <stream>.times holds (offset, unix ms) records, one whenever a chunk
// is appended at least kLogTimeStep after the stream's last record. A line's
// time is the record's at or before its first byte: when the head took the
// line in, to within the node's batching and kLogTimeStep.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace atl {

struct LogTime {
  std::int64_t offset = 0;   // the first byte of a chunk in the log
  std::int64_t unix_ms = 0;  // when it was appended
  bool operator==(const LogTime& o) const { return offset == o.offset && unix_ms == o.unix_ms; }
};

constexpr std::int64_t kLogTimeStep = 50;  // ms between records of one stream, at least
constexpr std::size_t kLogTimeRecordSize = 16;

// The 16 bytes of one record (two little-endian int64s).
std::string encode_log_time(const LogTime& t);

// Every whole record of a .times file, in order; a torn last record (a crash
// mid-write) and records that go back in offset are left out.
std::vector<LogTime> decode_log_times(std::string_view bytes);

// Where reading starts for "lines since since_ms": the offset of the first
// record at or after it; -1 when every record is older (nothing since).
std::int64_t log_offset_since(const std::vector<LogTime>& times, std::int64_t since_ms);

// The time of the byte at `offset`: the last record at or before it (0: none).
std::int64_t log_time_at(const std::vector<LogTime>& times, std::int64_t offset);

// "2026-12-03T16:45:31.188Z": UTC with milliseconds.
std::string format_utc_ms(std::int64_t unix_ms);

// `bytes` (read from `start`, at a line's start) with each line prefixed by
// its time and a space; a line with no known time gets "-" in its place.
std::string stamp_log_lines(std::string_view bytes, std::int64_t start,
                            const std::vector<LogTime>& times);

}  // namespace atl
