#include "atl/os/log_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "atl/core/log_times.hpp"

namespace atl::os {

namespace {

constexpr std::int64_t kMaxReadBytes = 4 << 20;

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// --- log times -----------------------------------------------------------------

// One record of a .times file, by index (pread: a day of records is MBs).
std::optional<LogTime> time_record(int fd, std::int64_t index) {
  char buf[kLogTimeRecordSize];
  if (::pread(fd, buf, sizeof buf, index * static_cast<std::int64_t>(kLogTimeRecordSize)) !=
      static_cast<ssize_t>(sizeof buf))
    return std::nullopt;
  auto one = decode_log_times(std::string_view(buf, sizeof buf));
  if (one.empty()) return std::nullopt;
  return one.front();
}

// The birth of a file in unix ms (when it was made), where its file system
// keeps one (ext4, xfs, btrfs, tmpfs do; statx says when not) and it can be
// the time of its first bytes: not after its last change. A copy that kept
// the times (tar, kubectl cp, cp -a, rsync -a) is born after it: its birth
// is the copy's, and its first lines read unstamped rather than wrong.
std::optional<std::int64_t> birth_ms(const std::string& path) {
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BTIME | STATX_MTIME, &sx) != 0 ||
      !(sx.stx_mask & STATX_BTIME) || !(sx.stx_mask & STATX_MTIME))
    return std::nullopt;
  auto ns = [](const statx_timestamp& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  // (A tick of slack: a file system may stamp its birth finer than its
  // writes, coarse clock ticks being ~4 ms.)
  if (ns(sx.stx_btime) > ns(sx.stx_mtime) + 20'000'000) return std::nullopt;
  return ns(sx.stx_btime) / 1'000'000;
}

// What <stream>.log links to (the current attempt's file, whose .times is
// beside it); the path itself when it is no link.
std::string link_target(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return path;
  std::string target(buf, static_cast<size_t>(n));
  if (target.front() == '/') return target;
  return path.substr(0, path.rfind('/') + 1) + target;
}

// A log's times: its .times file's records, after the one its birth gives
// ({0, made}) when the file has none for offset 0 (the writer makes the
// .times file at a stream's second record: the log is made as its first
// chunk comes, so the birth is that chunk's time).
struct TimesFile {
  int fd = -1;
  std::int64_t in_file = 0;     // records in the .times file
  std::optional<LogTime> born;  // the record in front of them
  explicit TimesFile(const std::string& log)
      : fd(::open(log_times_path(link_target(log)).c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0)
      in_file = st.st_size / static_cast<std::int64_t>(kLogTimeRecordSize);
    auto first = in_file > 0 ? time_record(fd, 0) : std::nullopt;
    if (!first || first->offset > 0)
      if (auto made = birth_ms(log); made && (!first || *made <= first->unix_ms))
        born = LogTime{0, *made};
  }
  ~TimesFile() {
    if (fd >= 0) ::close(fd);
  }
  TimesFile(const TimesFile&) = delete;
  TimesFile& operator=(const TimesFile&) = delete;

  std::int64_t count() const { return in_file + (born ? 1 : 0); }
  std::optional<LogTime> at(std::int64_t index) const {
    if (born && index == 0) return born;
    return time_record(fd, index - (born ? 1 : 0));
  }
  // The first record index for which `after` holds (records are in order,
  // so `after` is false then true along them): a binary search.
  template <class After>
  std::int64_t first_where(After after) const {
    std::int64_t lo = 0, hi = count();
    while (lo < hi) {
      std::int64_t mid = lo + (hi - lo) / 2;
      auto t = at(mid);
      if (!t || after(*t))
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
};

// The records that time the bytes [from, to) of `log`: the last one at or
// before `from`, and every one after it below `to`.
std::vector<LogTime> times_between(const std::string& log, std::int64_t from, std::int64_t to) {
  TimesFile f(log);
  if (f.count() == 0) return {};
  std::int64_t first = f.first_where([from](const LogTime& t) { return t.offset > from; });
  if (first > 0) --first;
  std::int64_t last = f.first_where([to](const LogTime& t) { return t.offset >= to; });
  std::vector<LogTime> out;
  if (f.born && first == 0 && last > 0) out.push_back(*f.born);
  // The file's part in one read (a day of records is MBs: only this part).
  const std::int64_t shift = f.born ? 1 : 0;
  const std::int64_t from_file = std::max<std::int64_t>(first - shift, 0);
  const std::int64_t to_file = last - shift;
  if (f.fd >= 0 && to_file > from_file) {
    std::string bytes(static_cast<size_t>(to_file - from_file) * kLogTimeRecordSize, '\0');
    ssize_t n = ::pread(f.fd, bytes.data(), bytes.size(),
                        from_file * static_cast<std::int64_t>(kLogTimeRecordSize));
    bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
    for (const auto& t : decode_log_times(bytes)) out.push_back(t);
  }
  return out;
}

}  // namespace

std::int64_t log_offset_since(const std::string& log, std::int64_t since_ms) {
  TimesFile f(log);
  const std::int64_t index =
      f.first_where([since_ms](const LogTime& t) { return t.unix_ms >= since_ms; });
  if (index < f.count())
    if (auto t = f.at(index)) return t->offset;
  struct stat st {};
  return ::stat(log.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

std::string stamp_log(const std::string& bytes, const std::string& log, std::int64_t start) {
  if (bytes.empty()) return bytes;
  auto times = times_between(log, start, start + static_cast<std::int64_t>(bytes.size()));
  return stamp_log_lines(bytes, start, times);
}

LogMatches search_log(const std::string& path, const std::string& needle, std::size_t max_shown) {
  constexpr std::size_t kMaxShownLine = 4096;
  LogMatches out;
  std::ifstream in(path, std::ios::binary);
  if (!in || needle.empty()) return out;
  auto lower = [](unsigned char c) { return static_cast<char>(std::tolower(c)); };
  std::string wanted;
  for (char c : needle) wanted += lower(static_cast<unsigned char>(c));
  auto take = [&](const std::string& line, std::int64_t offset) {
    ++out.lines;
    const auto hit =
        std::search(line.begin(), line.end(), wanted.begin(), wanted.end(),
                    [&](char a, char b) { return lower(static_cast<unsigned char>(a)) == b; });
    if (hit == line.end()) return;
    ++out.total;
    if (out.shown.size() < max_shown)
      out.shown.push_back({out.lines, offset, line.substr(0, kMaxShownLine)});
  };
  std::string line;
  std::int64_t line_start = 0, at = 0;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const std::streamsize n = in.gcount();
    for (std::streamsize k = 0; k < n; ++k, ++at) {
      if (block[k] != '\n') {
        // A line longer than a shown one is searched whole but kept whole
        // only up to 1 MiB (the rest of it can still match within that).
        if (line.size() < (std::size_t{1} << 20)) line += block[k];
        continue;
      }
      take(line, line_start);
      line.clear();
      line_start = at + 1;
    }
  }
  if (!line.empty()) take(line, line_start);  // a last line without its newline yet
  return out;
}

std::string log_times_path(const std::string& log) {
  const std::string suffix = ".log";
  if (log.size() >= suffix.size() &&
      log.compare(log.size() - suffix.size(), suffix.size(), suffix) == 0)
    return log.substr(0, log.size() - suffix.size()) + ".times";
  return log + ".times";
}

LogChunk read_log(const std::string& path, std::int64_t offset, std::int64_t max_bytes) {
  LogChunk out;
  offset = std::max<std::int64_t>(offset, 0);
  out.next_offset = offset;
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return out;
  struct stat st {};
  std::int64_t want = std::clamp<std::int64_t>(max_bytes, 0, kMaxReadBytes);
  if (::fstat(f.fd, &st) == 0) {
    if (offset > st.st_size) offset = 0;
    // No bigger than what is there (a follower mostly finds nothing new);
    // a file that grows meanwhile is read on the next call.
    want = std::min<std::int64_t>(want, st.st_size - offset);
  }
  out.bytes.resize(static_cast<size_t>(want));
  ssize_t n = ::pread(f.fd, out.bytes.data(), out.bytes.size(), offset);
  out.bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
  auto last_nl = out.bytes.rfind('\n');
  if (last_nl != std::string::npos) out.bytes.resize(last_nl + 1);
  out.next_offset = offset + static_cast<std::int64_t>(out.bytes.size());
  return out;
}

LogChunk read_log_following(const std::string& path, std::int64_t offset, std::int64_t max_bytes,
                            std::int64_t max_lag, std::int64_t keep) {
  struct stat st {};
  offset = std::max<std::int64_t>(offset, 0);
  if (::stat(path.c_str(), &st) == 0 && offset <= st.st_size && st.st_size - offset > max_lag) {
    std::int64_t from =
        std::max<std::int64_t>(st.st_size - std::max<std::int64_t>(keep, 0), offset);
    if (from > offset) {
      // From the first line that starts at or after `from`.
      Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
      char c = 0;
      if (f.fd >= 0 && ::pread(f.fd, &c, 1, from - 1) == 1 && c != '\n') {
        // The next line's start, looked for in small reads (lines are short).
        char block[4096];
        std::int64_t at = from;
        while (at < st.st_size) {
          ssize_t n = ::pread(f.fd, block, sizeof block, at);
          if (n <= 0) break;
          if (auto* nl = static_cast<char*>(std::memchr(block, '\n', static_cast<size_t>(n)))) {
            from = at + (nl - block) + 1;
            break;
          }
          at += n;
        }
      }
      LogChunk out = read_log(path, from, max_bytes);
      out.skipped = from - offset;
      return out;
    }
  }
  return read_log(path, offset, max_bytes);
}

LogChunk tail_log(const std::string& path, std::int64_t lines) {
  LogChunk out;
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return out;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return out;
  const std::int64_t end = st.st_size;
  // Walk back in blocks; the start is just after the lines-th newline from
  // the end (a final newline ends the last line, it does not start one).
  std::int64_t start = 0;
  std::int64_t pos = end;
  std::int64_t seen = 0;
  char block[65536];
  while (lines > 0 && pos > 0 && start == 0) {
    std::int64_t len = std::min<std::int64_t>(sizeof block, pos);
    pos -= len;
    if (::pread(f.fd, block, static_cast<size_t>(len), pos) != len) break;
    for (std::int64_t i = len - 1; i >= 0; --i) {
      std::int64_t at = pos + i;
      if (block[i] == '\n' && at != end - 1 && ++seen == lines) {
        start = at + 1;
        break;
      }
    }
  }
  if (lines <= 0) start = end;
  out.bytes.resize(static_cast<size_t>(end - start));
  ssize_t n = ::pread(f.fd, out.bytes.data(), out.bytes.size(), start);
  out.bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
  out.next_offset = end;
  return out;
}

std::vector<LogFileInfo> list_logs(const std::string& dir) {
  std::vector<LogFileInfo> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".log") != 0) continue;
    struct stat st {};
    if (::stat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({name.substr(0, name.size() - 4), static_cast<std::int64_t>(st.st_size)});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const LogFileInfo& a, const LogFileInfo& b) { return a.stream < b.stream; });
  return out;
}

}  // namespace atl::os
