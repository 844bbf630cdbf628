#include "atl/actors/log_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "atl/actors/messages.hpp"
#include "atl/os/logging.hpp"

namespace atl {

namespace {

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

struct LogSinkState {
  std::string dir;
  bool echo = true;
  std::map<std::int32_t, int> fds;
  std::string echo_buffer;

  ~LogSinkState() {
    for (auto& [stream, fd] : fds) ::close(fd);
  }

  std::string path(std::int32_t stream) const { return dir + "/" + stream_name(stream) + ".log"; }

  int fd_for(std::int32_t stream) {
    auto it = fds.find(stream);
    if (it != fds.end()) return it->second;
    int fd = ::open(path(stream).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      component_logger("logs")->error("cannot open {}: {}", path(stream), std::strerror(errno));
    }
    fds[stream] = fd;
    return fd;
  }

  void append(std::int32_t stream, const std::string& lines) {
    int fd = fd_for(stream);
    if (fd >= 0) write_all(fd, lines.data(), lines.size());
    if (!echo) return;
    const std::string prefix = stream_prefix(stream);
    echo_buffer.clear();
    echo_buffer.reserve(lines.size() + 64 * prefix.size());
    size_t start = 0;
    while (start < lines.size()) {
      size_t nl = lines.find('\n', start);
      size_t end = nl == std::string::npos ? lines.size() : nl + 1;
      echo_buffer += prefix;
      echo_buffer.append(lines, start, end - start);
      start = end;
    }
    write_all(STDOUT_FILENO, echo_buffer.data(), echo_buffer.size());
  }
};

using LogSinkActor = caf::stateful_actor<LogSinkState>;

caf::behavior log_sink(LogSinkActor* self, std::string dir, bool echo) {
  self->state.dir = std::move(dir);
  self->state.echo = echo;
  return {
      [self](log_atom, std::int32_t stream, const std::string& lines, std::int32_t) {
        self->state.append(stream, lines);
        if (auto sender = caf::actor_cast<caf::actor>(self->current_sender()))
          self->send(sender, ack_atom::value);
      },
      [](print_atom, const std::string& line) {
        std::string out = line + "\n";
        write_all(STDOUT_FILENO, out.data(), out.size());
      },
      [self](read_atom, std::int32_t stream, std::int64_t offset,
             std::int64_t max_bytes) -> std::tuple<std::string, std::int64_t> {
        std::string data;
        int fd = ::open(self->state.path(stream).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return {data, offset};
        data.resize(static_cast<size_t>(std::max<std::int64_t>(0, max_bytes)));
        ssize_t n = ::pread(fd, data.data(), data.size(), offset);
        ::close(fd);
        data.resize(n > 0 ? static_cast<size_t>(n) : 0);
        // Hand out whole lines only (unless one line is larger than max_bytes).
        auto last_nl = data.rfind('\n');
        if (last_nl != std::string::npos) data.resize(last_nl + 1);
        return {data, offset + static_cast<std::int64_t>(data.size())};
      },
      [self](tail_atom, std::int32_t stream,
             std::int64_t lines) -> std::tuple<std::string, std::int64_t> {
        int fd = ::open(self->state.path(stream).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return {std::string(), 0};
        struct stat st {};
        ::fstat(fd, &st);
        std::int64_t end = st.st_size;
        // Walk back in blocks; the start is just after the lines-th newline from
        // the end (a final newline ends the last line, it does not start one).
        std::int64_t start = 0;
        std::int64_t pos = end;
        std::int64_t seen = 0;
        char block[65536];
        while (lines > 0 && pos > 0 && start == 0) {
          std::int64_t len = std::min<std::int64_t>(sizeof block, pos);
          pos -= len;
          if (::pread(fd, block, static_cast<size_t>(len), pos) != len) break;
          for (std::int64_t i = len - 1; i >= 0; --i) {
            std::int64_t at = pos + i;
            if (block[i] == '\n' && at != end - 1 && ++seen == lines) {
              start = at + 1;
              break;
            }
          }
        }
        if (lines <= 0) start = end;
        std::string data(static_cast<size_t>(end - start), '\0');
        ssize_t n = ::pread(fd, data.data(), data.size(), start);
        ::close(fd);
        data.resize(n > 0 ? static_cast<size_t>(n) : 0);
        return {data, end};
      },
  };
}

}  // namespace

caf::actor spawn_log_sink(caf::actor_system& sys, std::string logs_dir, bool echo) {
  ::mkdir(logs_dir.c_str(), 0755);
  return sys.spawn<caf::detached>(log_sink, std::move(logs_dir), echo);
}

}  // namespace atl
