#include "atl/os/flight_recorder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "atl/os/process_sample.hpp"

namespace atl::os {

namespace {

// Whether `pid` is stopped (a SIGSTOP, a debugger's stop): its hook's thread
// is then out of its FIFO's open, so the FIFO has no reader at all.
bool is_stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  auto s = parse_proc_stat(line);
  return s && (s->state == 'T' || s->state == 't');
}

constexpr std::uintmax_t kMaxRecordBytes = 64u << 20;

std::string seconds_words(std::chrono::milliseconds ms) {
  std::ostringstream out;
  out.precision(ms.count() % 1000 == 0 ? 0 : 1);
  out << std::fixed << static_cast<double>(ms.count()) / 1000.0 << " s";
  return out.str();
}

// One byte into the FIFO, SIGPIPE held off this thread: a reader that went
// away in between is an answer ("gone"), never a signal to the agent.
bool poke(int fd) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const bool written = ::write(fd, "d", 1) == 1;
  if (!written && errno == EPIPE) {
    const timespec none{0, 0};
    sigtimedwait(&pipe_only, nullptr, &none);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return written;
}

}  // namespace

const std::string& flight_recorder_hook() {
  static const std::string text =
#include "flight_recorder_hook.inc"
      ;
  return text;
}

Status prepare_flight_recorder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // a link is removed, never followed
  if (::mkdir(dir.c_str(), 0700) != 0)
    return make_error("cannot make " + dir + ": " + std::strerror(errno));
  const std::string file = dir + "/sitecustomize.py";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return make_error("cannot write " + file + ": " + std::strerror(errno));
  const std::string& text = flight_recorder_hook();
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return make_error("cannot write " + file + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Ok{};
}

void remove_flight_recorder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

Expected<std::string> take_flight_record(const std::string& dir, pid_t pid,
                                         std::chrono::milliseconds timeout) {
  const std::string stem = dir + "/" + std::to_string(pid);
  const std::string fifo = stem + ".fifo", record = stem + ".json";
  const std::string no_hook = "no flight-recorder hook in pid " + std::to_string(pid) +
                              " (not Python, or its PYTHONPATH was replaced)";
  struct stat st {};
  if (::lstat(fifo.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return make_error(no_hook);
  ::unlink(record.c_str());  // an earlier look's, never read as this one's
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string stopped =
      "pid " + std::to_string(pid) + " is stopped (a SIGSTOP or a debugger): it cannot answer";
  int fd = -1;
  // ENXIO: nobody reads it yet (the hook's thread is starting, or between
  // two answers): again, up to the deadline.
  while ((fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)) < 0) {
    if (errno != ENXIO) return make_error(no_hook);
    if (std::chrono::steady_clock::now() >= deadline)
      return make_error(is_stopped(pid) ? stopped
                                        : "pid " + std::to_string(pid) +
                                              "'s flight-recorder hook is not listening");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool asked = poke(fd);
  ::close(fd);
  if (!asked) return make_error("pid " + std::to_string(pid) + " ended before it could answer");
  for (;;) {
    if (::lstat(record.c_str(), &st) == 0 && S_ISREG(st.st_mode)) break;
    // Stopped now, it cannot answer, whatever the FIFO said: a stop that
    // came while the hook's thread sat in its open still counts that thread
    // a reader until the thread itself takes the stop (the main thread's
    // 'T' can come first), so the poke went in and nobody will read it.
    if (std::chrono::steady_clock::now() >= deadline)
      return make_error(is_stopped(pid)
                            ? stopped
                            : "pid " + std::to_string(pid) + " did not answer within " +
                                  seconds_words(timeout) + " (stopped, or holding the GIL)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxRecordBytes)
    return make_error("pid " + std::to_string(pid) + "'s flight record is " +
                      std::to_string(st.st_size >> 20) + " MiB: more than the 64 MiB read");
  std::ifstream in(record, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  ::unlink(record.c_str());
  return text.str();
}

}  // namespace atl::os
