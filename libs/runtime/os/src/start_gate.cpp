#include "atl/os/start_gate.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace atl::os {

Expected<StartGate> StartGate::make() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return make_error(std::string("cannot make the local pods' start gate: ") +
                      std::strerror(errno));
  StartGate gate;
  gate.pod_end_ = fds[0];
  gate.head_end_ = fds[1];
  return gate;
}

StartGate::StartGate(StartGate&& other) noexcept { *this = std::move(other); }

StartGate& StartGate::operator=(StartGate&& other) noexcept {
  if (this != &other) {
    close_pod_end();
    if (head_end_ >= 0) ::close(head_end_);
    pod_end_ = other.pod_end_;
    head_end_ = other.head_end_;
    other.pod_end_ = other.head_end_ = -1;
  }
  return *this;
}

StartGate::~StartGate() {
  close_pod_end();
  if (head_end_ >= 0) ::close(head_end_);
}

void StartGate::close_pod_end() {
  if (pod_end_ >= 0) ::close(pod_end_);
  pod_end_ = -1;
}

void StartGate::open() {
  if (head_end_ < 0) return;
  // One byte into an empty pipe does not block; every pod sees it (a pod
  // looks without taking: see wait_at_start_gate).
  const char go = 1;
  ssize_t ignored = ::write(head_end_, &go, 1);
  (void)ignored;
  ::close(head_end_);
  head_end_ = -1;
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
    // Readable: the byte is there (the gate is open) or the pipe ended
    // without it (the head is gone). The byte stays in the pipe for the
    // other pods: the head wrote one for all.
    int queued = 0;
    outcome = ::ioctl(fd, FIONREAD, &queued) == 0 && queued > 0 ? GateOutcome::open
                                                                : GateOutcome::head_gone;
    break;
  }
  ::close(fd);
  return outcome;
}

}  // namespace atl::os
