#include "atl/os/log_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace atl::os {

namespace {

constexpr std::int64_t kMaxReadBytes = 4 << 20;

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

LogChunk read_log(const std::string& path, std::int64_t offset, std::int64_t max_bytes) {
  LogChunk out;
  offset = std::max<std::int64_t>(offset, 0);
  out.next_offset = offset;
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return out;
  struct stat st {};
  if (::fstat(f.fd, &st) == 0 && offset > st.st_size) offset = 0;
  out.bytes.resize(static_cast<size_t>(std::clamp<std::int64_t>(max_bytes, 0, kMaxReadBytes)));
  ssize_t n = ::pread(f.fd, out.bytes.data(), out.bytes.size(), offset);
  out.bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
  auto last_nl = out.bytes.rfind('\n');
  if (last_nl != std::string::npos) out.bytes.resize(last_nl + 1);
  out.next_offset = offset + static_cast<std::int64_t>(out.bytes.size());
  return out;
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
