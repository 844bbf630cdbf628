#include "atl/actors/log_sink.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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

// writev in batches of IOV_MAX, resuming after short writes.
void write_all_iov(int fd, std::vector<iovec>& iov) {
  size_t first = 0;
  while (first < iov.size()) {
    int count = static_cast<int>(std::min<size_t>(IOV_MAX, iov.size() - first));
    ssize_t n = ::writev(fd, iov.data() + first, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
}

std::string log_path(const std::string& dir, std::int32_t stream) {
  return dir + "/" + stream_name(stream) + ".log";
}

// One chunk of lines to append and echo, or one line to print.
struct WriteJob {
  std::int32_t stream = 0;
  std::string text;
  caf::actor ack_to;  // set for chunks: acked once written
  bool print_only = false;
};

// Owns the thread that does the blocking writes (files, stdout), so the actor
// never blocks a scheduler thread. The queue is bounded by the executors'
// ack windows: a chunk is acked only after it was written and echoed.
class LogWriter {
 public:
  LogWriter(std::string dir, bool echo) : dir_(std::move(dir)), echo_(echo) {
    thread_ = std::thread([this] { run(); });
  }

  ~LogWriter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    thread_.join();
    for (auto& [stream, fd] : fds_)
      if (fd >= 0) ::close(fd);
  }

  void push(WriteJob job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    while (true) {
      WriteJob job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;  // closing and drained
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      if (job.print_only) {
        job.text += '\n';
        write_all(STDOUT_FILENO, job.text.data(), job.text.size());
        continue;
      }
      append(job.stream, job.text);
      if (job.ack_to) caf::anon_send(job.ack_to, ack_atom::value);
    }
  }

  int fd_for(std::int32_t stream) {
    auto it = fds_.find(stream);
    if (it != fds_.end()) return it->second;
    // A new head process starts its logs afresh; within one process they only grow.
    std::string path = log_path(dir_, stream);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) component_logger("logs")->error("cannot open {}: {}", path, std::strerror(errno));
    fds_[stream] = fd;
    return fd;
  }

  void append(std::int32_t stream, const std::string& lines) {
    int fd = fd_for(stream);
    if (fd >= 0) write_all(fd, lines.data(), lines.size());
    // Debug commands' output is for the atlctl that ran them, not the job's log.
    if (!echo_ || decode_debug_stream(stream)) return;
    // Prefix each line without copying it: iovecs alternate prefix and line.
    const std::string prefix = stream_prefix(stream);
    iov_.clear();
    size_t start = 0;
    while (start < lines.size()) {
      size_t nl = lines.find('\n', start);
      size_t end = nl == std::string::npos ? lines.size() : nl + 1;
      iov_.push_back({const_cast<char*>(prefix.data()), prefix.size()});
      iov_.push_back({const_cast<char*>(lines.data()) + start, end - start});
      start = end;
    }
    write_all_iov(STDOUT_FILENO, iov_);
  }

  std::string dir_;
  bool echo_;
  std::map<std::int32_t, int> fds_;
  std::vector<iovec> iov_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<WriteJob> queue_;
  bool closing_ = false;
  std::thread thread_;
};

struct LogSinkState {
  std::string dir;
  std::unique_ptr<LogWriter> writer;  // destroyed (drained, joined) when the actor ends
};

using LogSinkActor = caf::stateful_actor<LogSinkState>;

caf::behavior log_sink(LogSinkActor* self, std::string dir, bool echo) {
  self->state.dir = dir;
  self->state.writer = std::make_unique<LogWriter>(std::move(dir), echo);
  return {
      [self](log_atom, std::int32_t stream, std::string& lines, std::int32_t) {
        self->state.writer->push(WriteJob{stream, std::move(lines),
                                          caf::actor_cast<caf::actor>(self->current_sender())});
      },
      [self](print_atom, std::string& line) {
        self->state.writer->push(WriteJob{0, std::move(line), caf::actor{}, true});
      },
      [self](read_atom, std::int32_t stream, std::int64_t offset,
             std::int64_t max_bytes) -> std::tuple<std::string, std::int64_t> {
        std::string data;
        int fd = ::open(log_path(self->state.dir, stream).c_str(), O_RDONLY | O_CLOEXEC);
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
        int fd = ::open(log_path(self->state.dir, stream).c_str(), O_RDONLY | O_CLOEXEC);
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
  return sys.spawn(log_sink, std::move(logs_dir), echo);
}

}  // namespace atl
