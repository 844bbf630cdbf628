// Reading the head's log files (<state-dir>/logs/<stream>.log) while they
// grow: the log sink answers `atlctl logs` with these, the dashboard's HTTP
// threads call them directly (no message to the sink per poll of a follower).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl::os {

struct LogChunk {
  std::string bytes;
  std::int64_t next_offset = 0;  // where the next read starts
  std::int64_t skipped = 0;      // bytes left out before `bytes` (read_log_following)
};

// Up to max_bytes from `offset`, whole lines only (unless one line is longer
// than max_bytes). Within an attempt a log only grows: an offset past the end
// was taken in an earlier attempt's file, so the read starts this one from
// its beginning (a follower across a restart). A missing file reads as empty.
LogChunk read_log(const std::string& path, std::int64_t offset, std::int64_t max_bytes);

// read_log for a follower that must not fall behind without end (a person
// reading a page): when more than max_lag bytes wait past `offset`, all but
// the last `keep` of them (from a line's start) are skipped and counted.
LogChunk read_log_following(const std::string& path, std::int64_t offset, std::int64_t max_bytes,
                            std::int64_t max_lag, std::int64_t keep);

// The last `lines` lines and the file's end (where a follower goes on).
LogChunk tail_log(const std::string& path, std::int64_t lines);

// The lines of a whole log that contain `needle` (ASCII letters in any
// case), read from disk a block at a time: how many there are, and the
// first `max_shown` with their line numbers (from 1) and byte offsets, each
// line cut to 4 KiB. A missing file has none.
struct LogMatch {
  std::int64_t line = 0;
  std::int64_t offset = 0;
  std::string text;
};
struct LogMatches {
  std::int64_t total = 0;
  std::int64_t lines = 0;  // lines searched
  std::vector<LogMatch> shown;
};
LogMatches search_log(const std::string& path, const std::string& needle, std::size_t max_shown);

// The .times file beside a log (core/log_times.hpp): "x.log" -> "x.times".
std::string log_times_path(const std::string& log);

// `bytes`, read from `log` at `start` (a line's start), each line prefixed
// with the time it came ("2026-12-03T16:45:31.188Z "); <stream>.log's link to
// the current attempt is followed to the .times beside its target.
std::string stamp_log(const std::string& bytes, const std::string& log, std::int64_t start);

// Where the lines of `log` that came at or after since_ms (unix ms) start;
// its end when none did. A binary search of the .times records (pread).
std::int64_t log_offset_since(const std::string& log, std::int64_t since_ms);

struct LogFileInfo {
  std::string stream;  // the file's name without ".log": "rank-3", "pod-worker-0", "head"
  std::int64_t bytes = 0;
};
// The *.log files directly in `dir` (the current attempt's), by name.
std::vector<LogFileInfo> list_logs(const std::string& dir);

}  // namespace atl::os
