#include "atl/os/start_gate.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace atl::os {

Expected<StartGate> StartGate::make(std::size_t pods) {
  StartGate gate;
  for (std::size_t i = 0; i < pods; ++i) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      return make_error(std::string("cannot make the local pods' start gate: ") +
                        std::strerror(errno));
    gate.head_ends_.push_back(fds[0]);
    gate.pod_ends_.push_back(fds[1]);
  }
  return gate;
}

StartGate::StartGate(StartGate&& other) noexcept { *this = std::move(other); }

StartGate& StartGate::operator=(StartGate&& other) noexcept {
  if (this != &other) {
    close_all();
    pod_ends_ = std::move(other.pod_ends_);
    head_ends_ = std::move(other.head_ends_);
    opened_ = other.opened_;
    other.pod_ends_.clear();
    other.head_ends_.clear();
  }
  return *this;
}

StartGate::~StartGate() { close_all(); }

void StartGate::close_all() {
  close_pod_ends();
  for (int fd : head_ends_)
    if (fd >= 0) ::close(fd);
  head_ends_.clear();
}

void StartGate::close_pod_ends() {
  for (int& fd : pod_ends_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void StartGate::open() {
  if (opened_) return;
  opened_ = true;
  // One byte into an empty socket does not block. A pod already gone (its
  // end closed): the head's end is closed, nothing to go on.
  const char go = 1;
  for (int& fd : head_ends_) {
    if (fd < 0) continue;
    if (::send(fd, &go, 1, MSG_NOSIGNAL) != 1) {
      ::close(fd);
      fd = -1;
    }
  }
}

std::vector<int> StartGate::take_lines() {
  if (!opened_) return {};
  std::vector<int> lines = std::move(head_ends_);
  head_ends_.clear();
  return lines;
}

std::optional<int> parse_start_gate_fd(const char* text) {
  if (!text || !*text) return std::nullopt;
  int fd = 0;
  for (const char* c = text; *c; ++c) {
    if (*c < '0' || *c > '9' || fd > 100000) return std::nullopt;
    fd = fd * 10 + (*c - '0');
  }
  if (fd <= 2) return std::nullopt;
  return fd;
}

std::optional<int> take_start_gate() {
  auto fd = parse_start_gate_fd(std::getenv(kStartGateEnv));
  ::unsetenv(kStartGateEnv);
  if (fd && ::fcntl(*fd, F_GETFD) < 0) return std::nullopt;  // not open: no gate
  if (fd) ::fcntl(*fd, F_SETFD, FD_CLOEXEC);                 // not into ranks
  return fd;
}

GateOutcome wait_at_start_gate(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  GateOutcome outcome = GateOutcome::timed_out;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      outcome = GateOutcome::head_gone;
      break;
    }
    if (rc == 0) {
      if (left.count() <= 0) break;
      continue;
    }
    // Readable: the byte is there (the gate is open) or the socket ended
    // without it (the head is gone). Exactly the byte is taken: what the
    // head sends after it is the line's (BASP's first bytes).
    char go = 0;
    ssize_t n;
    do {
      n = ::recv(fd, &go, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 1 && go == 1) return GateOutcome::open;
    outcome = GateOutcome::head_gone;
    break;
  }
  ::close(fd);
  return outcome;
}

}  // namespace atl::os
