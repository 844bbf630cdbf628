#include "atl/os/secrets.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "atl/core/dashboard_auth.hpp"

namespace atl::os {

std::string random_token(std::size_t chars) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  out.reserve(chars);
  unsigned char buf[64];
  while (out.size() < chars) {
    if (RAND_bytes(buf, sizeof buf) != 1) throw std::runtime_error("RAND_bytes failed");
    for (unsigned char b : buf) {
      if (b >= 248) continue;  // 248 = 4 * 62: no bias
      out.push_back(kAlphabet[b % 62]);
      if (out.size() == chars) break;
    }
  }
  return out;
}

Expected<std::string> read_small_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not wait for one.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return make_error(path + ": cannot read: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(path + ": not a regular file (a FIFO, a device or a directory): give a file");
  }
  std::string text;
  char buf[65536];
  while (text.size() <= max_bytes) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return make_error(path + ": cannot read: " + std::strerror(err));
    }
    if (got == 0) break;
    text.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (text.size() > max_bytes)
    return make_error(path + ": larger than " + std::to_string(max_bytes) +
                      " bytes: not the file meant");
  return text;
}

bool readable_by_others(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0;
}

Expected<std::string> load_token_file(const std::string& path) {
  constexpr std::size_t kMaxTokenFile = 4096;
  auto text = read_small_file(path, kMaxTokenFile);
  if (!text) return Error{text.error()};
  std::string token = text->substr(0, text->find('\n'));
  if (!token.empty() && token.back() == '\r') token.pop_back();
  if (auto ok = validate_dashboard_token(token); !ok) return make_error(path + ": " + ok.error());
  return token;
}

Expected<std::string> load_or_make_token_file(const std::string& path) {
  if (::access(path.c_str(), F_OK) == 0) return load_token_file(path);
  std::string token = random_token(43);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(path + ": cannot create: " + std::strerror(errno));
  std::string line = token + "\n";
  bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  int closed = ::close(fd);
  if (!written || closed != 0) {
    ::unlink(path.c_str());
    return make_error(path + ": cannot write: " + std::strerror(errno));
  }
  return token;
}

}  // namespace atl::os
