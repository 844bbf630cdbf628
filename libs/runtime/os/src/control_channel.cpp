#include "atl/os/control_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace atl::os {

Expected<ControlPair> make_control_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(std::string("socketpair: ") + std::strerror(errno));
  return ControlPair{fds[0], fds[1]};
}

std::optional<int> control_fd_from_environment() {
  const char* text = std::getenv(kControlFdVariable);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  long fd = std::strtol(text, &end, 10);
  if (*end != '\0' || fd < 0 || fd > 65535) return std::nullopt;
  return static_cast<int>(fd);
}

Status write_line(int fd, const std::string& line) {
  if (line.find('\n') != std::string::npos)
    return make_error("a control line may not hold a newline");
  std::string out = line + "\n";
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = ::send(fd, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(std::string("control channel: ") + std::strerror(errno));
    p += n;
    left -= static_cast<size_t>(n);
  }
  return Ok{};
}

LineReader::Result LineReader::read(std::string& line, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return Result::line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Result::timeout;
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Result::error;
    if (rc == 0) return Result::timeout;
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Result::error;
    if (n == 0) return Result::closed;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace atl::os
