#include "atl/actors/log_sink.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/log_stream.hpp"
#include "atl/core/log_times.hpp"
#include "atl/core/unsent_output.hpp"
#include "atl/os/echo_lines.hpp"
#include "atl/os/log_files.hpp"
#include "atl/os/logging.hpp"

namespace atl {

namespace {

// Writes everything or returns the errno that stopped it.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

std::string log_path(const std::string& dir, const StreamId& stream) {
  return dir + "/" + stream_name(stream) + ".log";
}

// The log of `stream` in `attempt` (0: the current one, through its link).
std::string log_path(const std::string& dir, const StreamId& stream, std::int32_t attempt) {
  if (attempt <= 0) return log_path(dir, stream);
  return dir + "/attempt-" + std::to_string(attempt) + "/" + stream_name(stream) + ".log";
}

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The size of an open file (where an O_APPEND write lands), -1 if unknown.
std::int64_t file_size(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::int64_t>(st.st_size) : -1;
}

// Writes all of `iov` (advancing past what each writev took) or returns the
// errno that stopped it. `give_up` is asked while a full pipe (nobody
// reading) blocks the write.
int write_iov_all(int fd, iovec* iov, int count, const std::function<bool()>& give_up) {
  int first = 0;
  while (first < count) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 100) == 0) {
      if (give_up()) return EAGAIN;
      continue;
    }
    ssize_t n = ::writev(fd, iov + first, std::min(count - first, IOV_MAX));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno;
    }
    auto left = static_cast<size_t>(n);
    while (first < count && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return 0;
}

// Whether writes to `fd` can interleave with other writers' mid-line unless
// each is at most PIPE_BUF bytes (a pipe or a socket: Kubernetes' stdout).
bool shared_stream(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

// The head's stdout echo, on a thread of its own so that a reader that stalls
// (nobody reads the pod's stdout) never holds up the files, the acks, or the
// control plane: past kEchoBudget bytes queued, chunks are not echoed (counted,
// and said once the reader catches up). Lines from `print` are never dropped.
// A chunk is echoed as it came, its stream's prefix put before each line by
// writev (EchoBatches): no copy of the bytes. On a pipe each write is at most
// PIPE_BUF bytes of whole lines (never split by the pipe, never mid-line
// among other writers); elsewhere up to IOV_MAX iovecs a write.
class EchoWriter {
 public:
  static constexpr size_t kEchoBudget = 16 << 20;

  EchoWriter() : atomic_bytes_(shared_stream(STDOUT_FILENO) ? PIPE_BUF : 0) {
    thread_ = std::thread([this] { run(); });
  }

  ~EchoWriter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  // `text` with `prefix` before each line that begins in it (`mid_line`:
  // its first bytes continue a line an earlier chunk began).
  void push(std::string text, std::string prefix, bool mid_line, std::int64_t lines,
            bool droppable) {
    const size_t bytes = text.size() + static_cast<size_t>(lines + 1) * prefix.size();
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      was_empty = queue_.empty();
      if (droppable && queued_ + bytes > kEchoBudget) {
        dropped_lines_ += lines;
        return;
      }
      if (dropped_lines_ > 0) {
        std::string note = "[atl] " + std::to_string(dropped_lines_) +
                           " lines were not echoed here (stdout was not read fast enough); the "
                           "log files have every line\n";
        queued_ += note.size();
        queue_.push_back(Chunk{std::move(note), {}, false, note.size()});
        dropped_lines_ = 0;
      }
      queued_ += bytes;
      queue_.push_back(Chunk{std::move(text), std::move(prefix), mid_line, bytes});
    }
    // The writer drains the queue before it waits again: it is woken only
    // when the queue was empty (a wake per chunk was a syscall per chunk).
    if (was_empty) wake_.notify_one();
  }

 private:
  struct Chunk {
    std::string text;
    std::string prefix;
    bool mid_line = false;
    size_t bytes = 0;  // counted against kEchoBudget while queued
  };

  void run() {
    std::vector<Chunk> batch;
    while (true) {
      batch.clear();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;  // closing and drained
        // What queued meanwhile goes in the same writes (8,000 ranks' first
        // lines at a restart); its bytes stay counted until written.
        while (!queue_.empty() && batch.size() < 256) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      // The views point into `batch`, which no longer moves.
      std::vector<os::EchoPiece> pieces;
      pieces.reserve(batch.size());
      size_t bytes = 0;
      for (const auto& c : batch) {
        pieces.push_back({c.text, c.prefix, c.mid_line});
        bytes += c.bytes;
      }
      // Once the head ends, a stalled reader gets 2 s more, not forever.
      auto give_up = [this] {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!closing_) return false;
        if (closing_since_ == std::chrono::steady_clock::time_point{})
          closing_since_ = std::chrono::steady_clock::now();
        return std::chrono::steady_clock::now() - closing_since_ > std::chrono::seconds(2);
      };
      os::EchoBatches writes(std::move(pieces), IOV_MAX, atomic_bytes_);
      bool stalled = false;
      for (auto w = writes.next(); !stalled && w.count > 0; w = writes.next())
        stalled = write_iov_all(STDOUT_FILENO, w.iov, w.count, give_up) == EAGAIN;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        queued_ -= bytes;
      }
      if (stalled) return;
    }
  }

  const size_t atomic_bytes_;  // PIPE_BUF on a pipe, else 0 (no limit)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Chunk> queue_;
  size_t queued_ = 0;
  std::int64_t dropped_lines_ = 0;
  bool closing_ = false;
  std::chrono::steady_clock::time_point closing_since_{};
  std::thread thread_;
};

// One chunk of lines to append and echo, or one line to print.
struct WriteJob {
  StreamId stream;
  std::string text;
  std::int32_t lines = 0;
  caf::actor ack_to;  // set for chunks: acked once written
  bool print_only = false;
  std::int32_t attempt = 0;  // > 0: from now on streams go to attempt-<attempt>/
  // A chunk's own attempt (0: the current one). A fenced pod's pump may
  // deliver its rank's last chunks after the job moved on: they belong to
  // the attempt that wrote them, not to the new attempt's file.
  std::int32_t chunk_attempt = 0;
  // >= 0: where `text` begins in its process's output (user code's chunks
  // from an executor, and those a pod kept): only what the attempt's file
  // lacks is written.
  std::int64_t offset = -1;
  // A chunk pod `pod` kept through its loss of the head (UnsentOutput),
  // sent as it rejoined: said in the head's log, not echoed.
  bool kept = false;
  std::string pod = {};
  // Non-empty: `text` is this file of attempt `chunk_attempt`'s dir, whole.
  std::string whole_file = {};
  // >= 0: forget the streams of this kind whose run (or task) is in `forget`.
  int forget_kind = -1;
  std::vector<std::int32_t> forget = {};
};

// A stream's log open for appends, with its .times file.
struct OpenFile {
  int fd = -1;
  std::uint64_t last_use = 0;
  int times_fd = -1;      // its .times file (-1: none, its lines read unstamped)
  std::int64_t size = 0;  // where the next chunk lands (-1: unknown)
  // A new file whose birth times its first chunk: the .times file is made at
  // its second record (`times_fd` -1 until then).
  bool times_later = false;
};

// Owns the thread that does the blocking file writes, so the actor never
// blocks a scheduler thread. The queue is bounded by the executors' ack
// windows: a chunk is acked once it is in its file. A write error is never
// silent: `on_error` hears of the first one per file (and the stream's later
// chunks are not written).
class LogWriter {
 public:
  using ErrorReport = std::function<void(const std::string&)>;

  LogWriter(std::string dir, bool echo, ErrorReport on_error)
      : dir_(std::move(dir)), echo_(echo), on_error_(std::move(on_error)) {
    dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    thread_ = std::thread([this] { run(); });
  }

  ~LogWriter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    thread_.join();
    close_all();
    if (attempt_fd_ >= 0) ::close(attempt_fd_);
    if (dir_fd_ >= 0) ::close(dir_fd_);
  }

  void push(WriteJob job) {
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      was_empty = queue_.empty();
      queue_.push_back(std::move(job));
    }
    if (was_empty) wake_.notify_one();  // else it is awake: it drains before it waits
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
        echo_thread_.push(std::move(job.text) + "\n", {}, false, 1, false);
        continue;
      }
      if (job.attempt > 0) {
        begin_attempt(job.attempt);
        continue;
      }
      // Only a chunk of an earlier attempt goes elsewhere (a later one cannot
      // come: the attempt begins before its ranks are launched).
      if (job.forget_kind >= 0) {
        forget_streams(static_cast<StreamKind>(job.forget_kind), job.forget);
        continue;
      }
      if (!job.whole_file.empty()) {
        write_whole(job.chunk_attempt, job.whole_file, job.text);
      } else if (job.kept) {
        append_kept(job);
      } else if (job.chunk_attempt > 0 && job.chunk_attempt < attempt_) {
        append_to_attempt(job.chunk_attempt, job.stream, job.text, job.offset);
      } else {
        append(job.stream, std::move(job.text), job.lines, job.offset);
      }
      if (job.ack_to) caf::anon_send(job.ack_to, ack_atom::value);
    }
  }

  void report(const std::string& path, const char* what, int err) {
    std::string line = std::string(what) + " " + path + ": " + std::strerror(err);
    component_logger("logs")->error("{}", line);
    if (on_error_) on_error_(line);
  }

  // Each attempt of the job writes its own files (attempt-K/rank-N.log);
  // rank-N.log is a link to the current attempt's. Nothing is truncated: an
  // earlier attempt's (or an earlier head's) lines stay where they were.
  // User code's <stream>.log links are made once, to current/<stream>.log,
  // and `current` is moved to attempt-K here: one link per attempt, not one
  // per rank (at 8,000 ranks the per-rank links were most of the head's
  // work in a restart, and a rank's exit waits for its lines to be written).
  // So between an attempt's start and a rank's first line its log reads
  // empty (as `kubectl logs` of a restarted container); attempt-K has the
  // earlier attempt's.
  void begin_attempt(std::int32_t attempt) {
    close_all();
    linked_.clear();
    failed_.clear();
    at_line_start_.clear();
    last_time_.clear();
    attempt_ = attempt;
    attempt_dir_ = "attempt-" + std::to_string(attempt);
    // Late chunks come from the attempt before (a fenced pod's) at most; an
    // older one's are measured against its file.
    for (auto it = written_to_.begin(); it != written_to_.end();)
      it = it->first.first < attempt - 1 ? written_to_.erase(it) : std::next(it);
    std::string path = dir_ + "/" + attempt_dir_;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) report(path, "cannot create", errno);
    if (attempt_fd_ >= 0) ::close(attempt_fd_);
    attempt_fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    // Does its file system keep births (statx: ext4, xfs, btrfs, tmpfs do)?
    struct statx sx {};
    births_kept_ = attempt_fd_ >= 0 &&
                   ::statx(attempt_fd_, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 &&
                   (sx.stx_mask & STATX_BTIME) != 0;
    if (!replace_link(attempt_dir_, kCurrent)) report(dir_ + "/" + kCurrent, "cannot link", errno);
  }

  // <dir>/<name> becomes a link to `target`, atomically (a new link moved
  // over the old one). False (errno set) if it could not.
  bool replace_link(const std::string& target, const std::string& name) {
    const std::string tmp = name + ".new";
    ::unlinkat(dir_fd_, tmp.c_str(), 0);
    return ::symlinkat(target.c_str(), dir_fd_, tmp.c_str()) == 0 &&
           ::renameat(dir_fd_, tmp.c_str(), dir_fd_, name.c_str()) == 0;
  }

  // <dir>/<stream>.log pointing at the stream's file of this attempt: user
  // code's through `current` (made once per head, or mended if an earlier
  // head left it pointing elsewhere), the others' (a node's log, a debug
  // run's, a task's) at attempt-K's file itself.
  void link_stream(const StreamId& stream, const std::string& name) {
    bool ok = true;
    if (stream.is_user_code()) {
      if (!through_current_.insert(stream).second) return;
      const std::string target = std::string(kCurrent) + "/" + name;
      if (::symlinkat(target.c_str(), dir_fd_, name.c_str()) != 0) {
        char buf[PATH_MAX];
        const ssize_t n = ::readlinkat(dir_fd_, name.c_str(), buf, sizeof buf);
        if (n < 0 || std::string_view(buf, static_cast<size_t>(n)) != target)
          ok = replace_link(target, name);
      }
    } else {
      ok = replace_link(attempt_dir_ + "/" + name, name);
    }
    if (!ok) report(log_path(dir_, stream), "cannot link", errno);
  }

  // A chunk of another attempt than the current one (late, from a pod that
  // was cut off): appended to that attempt's file, opened for this write
  // only; not echoed (the head's stdout shows the current attempt).
  void append_to_attempt(std::int32_t attempt, const StreamId& stream, const std::string& lines,
                         std::int64_t offset) {
    write_to_attempt(attempt, stream, lines, offset);
  }

  // How many leading bytes of a chunk at `offset` of its process's output
  // the attempt's file has already, and the chunk counted as written: a
  // chunk can come twice (a connection cut and healed delivers what it held
  // after the pod rejoined and sent its kept copy). A stream's first chunk
  // here is measured against its file (`file_has` bytes: the file of a
  // process's output from its start; -1 unknown: nothing skipped).
  std::size_t already_written(std::int32_t attempt, const StreamId& stream, std::int64_t offset,
                              std::size_t length, std::int64_t file_has) {
    auto it = written_to_.try_emplace({attempt, stream}, file_has).first;
    const std::size_t had = bytes_already_kept(it->second, offset, length);
    it->second = std::max(it->second, offset + static_cast<std::int64_t>(length));
    return had;
  }

  // The streams of debug runs (or tasks) the supervisor's history dropped:
  // their files in every attempt dir they were written in, their link, and
  // every per-stream entry here. What a run of 512 ranks left behind (two
  // files and a link per rank, a series each) stayed for good.
  void forget_streams(StreamKind kind, const std::vector<std::int32_t>& ids) {
    const std::set<std::int32_t> gone(ids.begin(), ids.end());
    auto dropped = [&](const StreamId& s) { return s.kind == kind && gone.count(s.run) > 0; };
    for (auto it = fds_.begin(); it != fds_.end();) {
      if (dropped(it->first)) {
        close_file(it->first, it->second);
        it = fds_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = written_.begin(); it != written_.end();) {
      if (!dropped(it->first)) {
        ++it;
        continue;
      }
      const std::string name = stream_name(it->first) + ".log";
      for (const auto& attempt_dir : it->second) {
        const std::string path = dir_ + "/" + attempt_dir + "/" + name;
        ::unlink(path.c_str());
        ::unlink(os::log_times_path(path).c_str());
      }
      ::unlink(log_path(dir_, it->first).c_str());  // the link
      it = written_.erase(it);
    }
    auto erase_from = [&](auto& container) {
      for (auto it = container.begin(); it != container.end();) {
        if (dropped(key_of(*it)))
          it = container.erase(it);
        else
          ++it;
      }
    };
    erase_from(linked_);
    erase_from(failed_);
    erase_from(at_line_start_);
    erase_from(last_time_);
  }
  static const StreamId& key_of(const StreamId& s) { return s; }
  template <class V>
  static const StreamId& key_of(const std::pair<const StreamId, V>& p) {
    return p.first;
  }

  // attempt-<attempt>/<name>, replaced whole (a new file moved over it).
  void write_whole(std::int32_t attempt, const std::string& name, const std::string& text) {
    std::string dir = dir_ + "/attempt-" + std::to_string(attempt);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      report(dir, "cannot create", errno);
      return;
    }
    const std::string path = dir + "/" + name;
    const std::string tmp = path + ".new";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      report(tmp, "cannot open", errno);
      return;
    }
    const int err = write_all(fd, text.data(), text.size());
    ::close(fd);
    if (err != 0) {
      report(tmp, "cannot write", err);
      ::unlink(tmp.c_str());
      return;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) report(path, "cannot write", errno);
  }

  // A chunk a pod kept through its loss of the head, sent as it rejoined:
  // only what the attempt's file lacks is written (the chunk may have come
  // before the cut, its acknowledgement not), and the head's log says so.
  void append_kept(const WriteJob& job) {
    const std::int32_t attempt = job.chunk_attempt > 0 ? job.chunk_attempt : attempt_;
    if (attempt <= 0) return;
    auto had = write_to_attempt(attempt, job.stream, job.text, job.offset);
    if (!had) return;
    // The current attempt's open file (if any) ends elsewhere now.
    if (attempt == attempt_)
      if (auto it = fds_.find(job.stream); it != fds_.end())
        it->second.size = file_size(it->second.fd);
    const std::size_t taken = job.text.size() - *had;
    auto log = component_logger("logs");
    if (*had > 0) {
      log->info(
          "took {} bytes of {}'s output (attempt {}) that pod {} kept through its cut "
          "({} bytes of it had come before)",
          taken, stream_name(job.stream), attempt, job.pod, *had);
    } else {
      log->info("took {} bytes of {}'s output (attempt {}) that pod {} kept through its cut", taken,
                stream_name(job.stream), attempt, job.pod);
    }
  }

  // Appends to attempt-<attempt>/<stream>.log; with `offset` >= 0 only
  // the part the file lacks. The bytes the file had already of those
  // given; nullopt if nothing could be written.
  std::optional<std::size_t> write_to_attempt(std::int32_t attempt, const StreamId& stream,
                                              const std::string& lines, std::int64_t offset) {
    std::string dir = dir_ + "/attempt-" + std::to_string(attempt);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      report(dir, "cannot create", errno);
      return std::nullopt;
    }
    std::string path = dir + "/" + stream_name(stream) + ".log";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      report(path, "cannot open", errno);
      return std::nullopt;
    }
    std::int64_t at = file_size(fd);
    const std::size_t had =
        offset >= 0 ? already_written(attempt, stream, offset, lines.size(), at) : 0;
    std::optional<std::size_t> result = had;
    if (had == lines.size()) {
      // all of it there already
    } else if (int err = write_all(fd, lines.data() + had, lines.size() - had); err != 0) {
      report(path, "cannot write", err);
      result = std::nullopt;
    } else if (at >= 0) {
      int times =
          ::open(os::log_times_path(path).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (times >= 0) {
        std::string record = encode_log_time({at, now_unix_ms()});
        write_all(times, record.data(), record.size());  // a time lost is a line unstamped
        ::close(times);
      }
    }
    ::close(fd);
    return result;
  }

  void close_all() {
    for (auto& [stream, f] : fds_) close_file(stream, f);
    fds_.clear();
  }

  void close_file(const StreamId& stream, const OpenFile& f) {
    if (::close(f.fd) != 0) report(log_path(dir_, stream), "cannot close", errno);
    if (f.times_fd >= 0) ::close(f.times_fd);
  }

  // A record of when the chunk at `offset` came, at most one per
  // kLogTimeStep per stream. A stream's first chunk has none where its file
  // was made for it: the file's birth is its time (os::stamp_log reads it
  // so), and the .times file is made at the second record. At 8,000 ranks
  // that is 8,000 files fewer per attempt for ranks that print a line as
  // they start and then compute (one file made per rank per attempt, not
  // two, where a restart waits for them).
  // The .times file beside this attempt's `log_name`, open for appends.
  int open_times(const std::string& log_name) {
    return ::openat(attempt_fd_, os::log_times_path(log_name).c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }

  void note_time(const StreamId& stream, OpenFile& f, std::int64_t offset) {
    if ((f.times_fd < 0 && !f.times_later) || offset < 0) return;
    const std::int64_t now = now_unix_ms();
    auto [last, fresh] = last_time_.try_emplace(stream, now);
    if (!fresh && now - last->second < kLogTimeStep) return;
    last->second = now;
    if (f.times_later) {
      if (offset == 0) return;  // its birth says when
      f.times_later = false;
      f.times_fd = open_times(stream_name(stream) + ".log");
      if (f.times_fd < 0) return;  // its later lines read with the birth's time
    }
    std::string record = encode_log_time({offset, now});
    if (write_all(f.times_fd, record.data(), record.size()) != 0) {
      ::close(f.times_fd);  // its lines read unstamped from here; the log itself goes on
      f.times_fd = -1;
    }
  }

  // At most kMaxOpenFiles descriptors: thousands of ranks (and a stream per
  // rank per debug run) would otherwise exhaust the head's file limit. The
  // least recently written is closed; files are append-only, so reopening
  // one later (O_APPEND) goes on where it was.
  int fd_for(const StreamId& stream) {
    auto it = fds_.find(stream);
    if (it != fds_.end()) {
      it->second.last_use = ++use_clock_;
      return it->second.fd;
    }
    if (attempt_dir_.empty()) begin_attempt(1);
    if (fds_.size() >= kMaxOpenFiles) {
      // The least recently written eighth goes at once: one walk per 32
      // files opened, not one per file (8,000 ranks' first lines at a
      // restart each opened a file: 8,000 walks of 256).
      std::vector<std::pair<std::uint64_t, StreamId>> by_use;
      by_use.reserve(fds_.size());
      for (const auto& [s, f] : fds_) by_use.emplace_back(f.last_use, s);
      const auto cut = by_use.begin() + static_cast<std::ptrdiff_t>(kMaxOpenFiles / 8);
      std::nth_element(by_use.begin(), cut, by_use.end());
      for (auto o = by_use.begin(); o != cut; ++o) {
        auto it = fds_.find(o->second);
        close_file(it->first, it->second);
        fds_.erase(it);
      }
    }
    const std::string name = stream_name(stream) + ".log";
    // Relative to the attempt's dir: no walk of the whole path per file.
    int fd = ::openat(attempt_fd_, name.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      report(log_path(dir_, stream), "cannot open", errno);
      return -1;
    }
    // A debug run's or a task's files are forgotten with its record.
    if (stream.kind == StreamKind::run || stream.kind == StreamKind::task)
      written_[stream].insert(attempt_dir_);
    if (linked_.insert(stream).second) link_stream(stream, name);
    const std::int64_t size = file_size(fd);
    // New (nothing in it yet) where births are kept: its .times file later.
    const bool later = size == 0 && births_kept_;
    const int times = later ? -1 : open_times(name);
    fds_[stream] = OpenFile{fd, ++use_clock_, times, size, later};
    return fd;
  }

  void append(const StreamId& stream, std::string lines, std::int32_t count,
              std::int64_t offset = -1) {
    if (offset >= 0 && stream.is_user_code() && !failed_.count(stream)) {
      // What the file has of it already is neither written nor echoed again.
      int fd = fd_for(stream);
      auto it = fds_.find(stream);
      const std::int64_t file_has = fd >= 0 && it != fds_.end() ? it->second.size : -1;
      const std::size_t had = already_written(attempt_, stream, offset, lines.size(), file_has);
      if (had == lines.size()) return;
      if (had > 0) {
        lines.erase(0, had);
        count = static_cast<std::int32_t>(std::count(lines.begin(), lines.end(), '\n'));
      }
    }
    if (!failed_.count(stream)) {
      int fd = fd_for(stream);
      int err = fd < 0 ? EBADF : write_all(fd, lines.data(), lines.size());
      if (fd >= 0 && err != 0) report(log_path(dir_, stream), "cannot write", err);
      if (err != 0) {
        // One report per file; the job is failing anyway.
        failed_.insert(stream);
        if (auto it = fds_.find(stream); it != fds_.end()) {
          ::close(it->second.fd);
          if (it->second.times_fd >= 0) ::close(it->second.times_fd);
          fds_.erase(it);
        }
      } else if (auto it = fds_.find(stream); it != fds_.end()) {
        OpenFile& f = it->second;
        note_time(stream, f, f.size);
        if (f.size >= 0) f.size += static_cast<std::int64_t>(lines.size());
      }
    }
    // Debug commands' output is for the atlctl that ran them, not the job's log.
    // Nor are the head's and agents' own logs (on their stderr already).
    if (!echo_ || stream.kind == StreamKind::run || stream.is_agent_log() || lines.empty()) return;
    // A chunk may end mid-line (an unfinished line sent after 1 s): the next
    // one continues it, without a prefix in the middle.
    bool& at_line_start = at_line_start_.try_emplace(stream, true).first->second;
    const bool mid_line = !at_line_start;
    at_line_start = lines.back() == '\n';
    echo_thread_.push(std::move(lines), stream_prefix(stream), mid_line, count, true);
  }

  std::string dir_;
  bool echo_;
  ErrorReport on_error_;
  std::int32_t attempt_ = 0;  // K of attempt_dir_ (0: none yet)
  std::string attempt_dir_;   // "attempt-K": where the streams' files are now
  static constexpr size_t kMaxOpenFiles = 256;
  std::map<StreamId, OpenFile> fds_;  // open now (at most kMaxOpenFiles)
  std::uint64_t use_clock_ = 0;
  std::set<StreamId> linked_;           // streams with a file and link in this attempt
  std::set<StreamId> through_current_;  // user code's streams linked through `current`
  static constexpr const char* kCurrent = "current";
  int dir_fd_ = -1;                         // dir_, open
  int attempt_fd_ = -1;                     // dir_/attempt_dir_, open
  bool births_kept_ = false;                // its file system keeps births (statx)
  std::set<StreamId> failed_;               // streams whose file cannot be written (reported once)
  std::map<StreamId, bool> at_line_start_;  // per stream: did the last echo end a line
  std::map<StreamId, std::int64_t> last_time_;  // per stream: its last .times record (unix ms)
  // Debug runs' and tasks' streams: the attempt dirs they have files in.
  std::map<StreamId, std::set<std::string>> written_;
  // User code's streams, per attempt: how far into its process's output each
  // file is written (the current attempt's and the one before).
  std::map<std::pair<std::int32_t, StreamId>, std::int64_t> written_to_;
  EchoWriter echo_thread_;  // destroyed after the file thread: drains the last lines
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<WriteJob> queue_;
  bool closing_ = false;
  std::thread thread_;
};

struct LogSinkState {
  std::string dir;
  // Who hears of write errors (the supervisor); shared with the writer thread.
  std::shared_ptr<std::mutex> watcher_mutex = std::make_shared<std::mutex>();
  std::shared_ptr<caf::actor> watcher = std::make_shared<caf::actor>();
  std::unique_ptr<LogWriter> writer;  // destroyed (drained, joined) when the actor ends
  // Bytes and lines taken per stream since the head started (metrics): user
  // code's streams and the debug runs' and tasks' still running; those of
  // ended runs and tasks are folded into their kind's (ended_totals), so the
  // series are as many as what lives, whatever the history keeps.
  std::map<StreamId, std::pair<std::int64_t, std::int64_t>> totals;
  std::map<StreamKind, std::pair<std::int64_t, std::int64_t>> ended_totals;
};

using LogSinkActor = caf::stateful_actor<LogSinkState>;

caf::behavior log_sink(LogSinkActor* self, std::string dir, bool echo) {
  auto& st = self->state;
  st.dir = dir;
  st.writer = std::make_unique<LogWriter>(
      std::move(dir), echo,
      [mutex = st.watcher_mutex, watcher = st.watcher](const std::string& line) {
        std::lock_guard<std::mutex> lock(*mutex);
        if (*watcher) caf::anon_send(*watcher, disk_error_atom::value, line);
      });
  self->set_exception_handler([](caf::scheduled_actor*, std::exception_ptr& e) -> caf::error {
    component_logger("logs")->critical("log writer failed: {}", describe_exception(e));
    return caf::exit_reason::unhandled_exception;  // the supervisor monitors us
  });
  return {
      [self](watch_atom) {
        std::lock_guard<std::mutex> lock(*self->state.watcher_mutex);
        *self->state.watcher = caf::actor_cast<caf::actor>(self->current_sender());
      },
      [self](log_atom, const StreamId& stream, std::string& lines, std::int32_t count) {
        auto& total = self->state.totals[stream];
        total.first += static_cast<std::int64_t>(lines.size());
        total.second += count;
        self->state.writer->push(WriteJob{stream, std::move(lines), count,
                                          caf::actor_cast<caf::actor>(self->current_sender())});
      },
      // A chunk with the attempt of the process that wrote it and where it
      // begins in its output (executors send this form; the nodes' own logs
      // take the one above).
      [self](log_atom, const StreamId& stream, std::int32_t attempt, std::int64_t offset,
             std::string& lines, std::int32_t count) {
        auto& total = self->state.totals[stream];
        total.first += static_cast<std::int64_t>(lines.size());
        total.second += count;
        WriteJob job{stream, std::move(lines), count,
                     caf::actor_cast<caf::actor>(self->current_sender())};
        // Only user code's streams (ranks, the driver, Ray's processes) have
        // per-attempt files; a debug run's or a task's `attempt` is its own id.
        if (stream.is_user_code()) {
          job.chunk_attempt = attempt;
          job.offset = offset;
        }
        self->state.writer->push(std::move(job));
      },
      // A pod's output kept through its loss of the head (the supervisor
      // checked who sent it): to the attempt that wrote it, what is missing.
      [self](KeptOutput& kept) {
        auto& chunk = kept.chunk;
        auto& total = self->state.totals[chunk.stream];
        total.first += static_cast<std::int64_t>(chunk.bytes.size());
        total.second += chunk.lines;
        WriteJob job{chunk.stream, std::move(chunk.bytes), chunk.lines, caf::actor{}};
        job.chunk_attempt = chunk.attempt;
        job.offset = chunk.offset;
        job.kept = true;
        job.pod = std::move(kept.pod);
        self->state.writer->push(std::move(job));
        return true;
      },
      // The history dropped these runs or tasks: their totals and files go.
      [self](sink_order::ForgetStreams& order) {
        const auto kind = static_cast<std::int32_t>(order.kind);
        auto& ids = order.ids;
        if (kind != static_cast<std::int32_t>(StreamKind::run) &&
            kind != static_cast<std::int32_t>(StreamKind::task))
          return;  // only a debug run's or a task's streams are ever dropped
        const std::set<std::int32_t> gone(ids.begin(), ids.end());
        auto& totals = self->state.totals;
        for (auto it = totals.begin(); it != totals.end();) {
          if (static_cast<std::int32_t>(it->first.kind) == kind && gone.count(it->first.run))
            it = totals.erase(it);
          else
            ++it;
        }
        WriteJob job{StreamId{}, "", 0, caf::actor{}};
        job.forget_kind = kind;
        job.forget = std::move(ids);
        self->state.writer->push(std::move(job));
      },
      // A file of an attempt's log dir, written whole (the supervisor's:
      // a rank's raw flight record). A plain name only.
      [self](sink_order::KeepFile& order) {
        const std::int32_t attempt = order.attempt;
        const std::string& name = order.name;
        if (attempt < 1 || name.empty() || name[0] == '.' ||
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789._-") != std::string::npos)
          return;
        WriteJob job{StreamId{}, std::move(order.text), 0, caf::actor{}};
        job.chunk_attempt = attempt;
        job.whole_file = name;
        self->state.writer->push(std::move(job));
      },
      [self](const sink_order::StreamsEnded& order) {
        const auto kind = static_cast<std::int32_t>(order.kind);
        const auto& ids = order.ids;
        if (kind != static_cast<std::int32_t>(StreamKind::run) &&
            kind != static_cast<std::int32_t>(StreamKind::task))
          return;
        auto& st = self->state;
        const std::set<std::int32_t> ended(ids.begin(), ids.end());
        auto& folded = st.ended_totals[static_cast<StreamKind>(kind)];
        for (auto it = st.totals.begin(); it != st.totals.end();) {
          if (static_cast<std::int32_t>(it->first.kind) != kind || !ended.count(it->first.run)) {
            ++it;
            continue;
          }
          folded.first += it->second.first;
          folded.second += it->second.second;
          it = st.totals.erase(it);
        }
      },
      [self](metrics_atom) {
        nlohmann::json j = nlohmann::json::object();
        for (const auto& [stream, total] : self->state.totals)
          j[stream_name(stream)] = {{"bytes", total.first}, {"lines", total.second}};
        for (const auto& [kind, total] : self->state.ended_totals)
          j[kind == StreamKind::run ? "ended-runs" : "ended-tasks"] = {{"bytes", total.first},
                                                                       {"lines", total.second}};
        return j.dump();
      },
      [self](sink_order::Print& order) {
        self->state.writer->push(
            WriteJob{StreamId{}, std::move(order.line), 1, caf::actor{}, true});
      },
      [self](const sink_order::NewAttempt& order) {
        if (order.attempt > 0)
          self->state.writer->push(WriteJob{StreamId{}, "", 0, caf::actor{}, false, order.attempt});
      },
  };
}

// A read's bytes with each line's time in front (stamped) or as they are.
std::string maybe_stamped(std::string bytes, const std::string& log, std::int64_t start,
                          bool stamped) {
  return stamped ? os::stamp_log(bytes, log, start) : bytes;
}

// The streams that have bytes past their offset, in order, up to max_total in
// all, from attempt K's files (0: the current one), stamped on request.
LogChunks read_from(const std::string& dir, const LogRead& r) {
  LogChunks out;
  if (r.streams.size() != r.offsets.size()) return out;
  std::int64_t left = std::clamp<std::int64_t>(r.max_bytes, 0, 16 << 20);
  for (size_t i = 0; i < r.streams.size() && left > 0; ++i) {
    const std::string path = log_path(dir, r.streams[i], r.attempt);
    auto chunk = os::read_log(path, r.offsets[i], left);
    if (chunk.bytes.empty()) continue;
    left -= static_cast<std::int64_t>(chunk.bytes.size());
    const std::int64_t start = chunk.next_offset - static_cast<std::int64_t>(chunk.bytes.size());
    out.streams.push_back(r.streams[i]);
    out.next_offsets.push_back(chunk.next_offset);
    out.bytes.push_back(maybe_stamped(std::move(chunk.bytes), path, start, r.stamped));
  }
  return out;
}

LogChunks read_logs(const std::string& dir, const LogRead& r) {
  if (r.kind == LogRead::from) return read_from(dir, r);
  LogChunks out;
  if (r.kind == LogRead::tail && !r.streams.empty()) {
    const std::string path = log_path(dir, r.streams[0], r.attempt);
    auto chunk = os::tail_log(path, r.lines);
    const std::int64_t start = chunk.next_offset - static_cast<std::int64_t>(chunk.bytes.size());
    out.streams.push_back(r.streams[0]);
    out.bytes.push_back(maybe_stamped(std::move(chunk.bytes), path, start, r.stamped));
    out.next_offsets.push_back(chunk.next_offset);
  } else if (r.kind == LogRead::since) {
    for (const auto& stream : r.streams) {
      out.streams.push_back(stream);
      out.bytes.emplace_back();
      out.next_offsets.push_back(
          os::log_offset_since(log_path(dir, stream, r.attempt), r.since_ms));
    }
  }
  return out;
}

// The reads (atlctl logs, run, the C API's task output) on a thread of their
// own: not behind the chunks in the sink's mailbox, and no blocking file read
// on a scheduler thread. The files are the writer's: a read sees what it wrote.
caf::behavior log_reader(std::string logs_dir) {
  auto dir = std::make_shared<const std::string>(std::move(logs_dir));
  return {
      [dir](const LogRead& r) { return read_logs(*dir, r); },
  };
}

}  // namespace

caf::actor spawn_log_reader(caf::actor_system& sys, std::string logs_dir) {
  return sys.spawn<caf::detached>(log_reader, std::move(logs_dir));
}

caf::actor spawn_log_sink(caf::actor_system& sys, std::string logs_dir, bool echo) {
  ::mkdir(logs_dir.c_str(), 0755);
  return sys.spawn(log_sink, std::move(logs_dir), echo);
}

}  // namespace atl
