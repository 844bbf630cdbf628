#include "atl/os/secrets.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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

Expected<std::string> load_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(path + ": cannot read: " + std::strerror(errno));
  std::string token;
  std::getline(in, token);
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
