#include "atl/os/run_capture.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace atl::os {

std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    if (end > start) dirs.push_back(p.substr(start, end - start));
    start = end + 1;
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const auto& d : dirs) {
    std::string candidate = d + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

Expected<Captured> run_capture(const std::vector<std::string>& argv,
                               std::chrono::milliseconds timeout, std::size_t max_bytes) {
  if (argv.empty()) return make_error("run_capture: no command");
  SpawnRequest req;
  req.argv = argv;
  req.argv[0] = find_program(argv[0]);
  if (req.argv[0].empty()) return make_error(argv[0] + ": not found on PATH");
  req.env = current_environment();
  req.output = OutputMode::pipe;
  auto child = ChildProcess::spawn(req);
  if (!child) return make_error(argv[0] + ": " + child.error());
  Captured out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[16384];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd pfd{child->output_fd(), POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // the deadline is checked at the top
    ssize_t n = ::read(child->output_fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: it is done writing
    const size_t room = max_bytes > out.output.size() ? max_bytes - out.output.size() : 0;
    out.output.append(buf, std::min(room, static_cast<size_t>(n)));
    if (static_cast<size_t>(n) > room) out.truncated = true;
  }
  if (out.timed_out) {
    child->signal(SIGKILL);
    child->wait();
    return out;
  }
  // Its output ended; it ends too (bounded by what is left of the deadline).
  while (!child->try_wait() && std::chrono::steady_clock::now() < deadline) ::usleep(2000);
  if (!child->reaped()) {
    out.timed_out = true;
    child->signal(SIGKILL);
    child->wait();
    return out;
  }
  out.status = child->status();
  return out;
}

}  // namespace atl::os
