#include "atl/os/pty_session.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <thread>

namespace atl::os {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Every process of session `sid` (the shell's, as setsid made it): its
// background jobs have process groups of their own that a signal to the
// shell's group misses. What left the session (setsid, a daemon) stays.
void signal_session(pid_t sid, std::initializer_list<int> sigs) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    std::string path = std::string("/proc/") + e->d_name + "/stat";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
    const char* p = std::strrchr(buf, ')');
    long ppid = 0, pgrp = 0, session = 0;
    char state = 0;
    if (p && std::sscanf(p + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &session) == 4 &&
        session == sid)
      for (int sig : sigs) ::kill(static_cast<pid_t>(pid), sig);
  }
  ::closedir(proc);
}

bool executable(const std::string& path) {
  return !path.empty() && path[0] == '/' && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

void use_shell(PtyOptions& options, const char* shell_env) {
  std::string shell;
  if (shell_env && executable(shell_env)) {
    shell = shell_env;
  } else {
    for (const char* s : {"/bin/bash", "/usr/bin/bash", "/bin/sh"})
      if (executable(s)) {
        shell = s;
        break;
      }
  }
  if (shell.empty()) shell = "/bin/sh";
  options.program = shell;
  options.argv = {shell.substr(shell.rfind('/') + 1)};
}

Expected<std::unique_ptr<PtySession>> PtySession::start(const PtyOptions& options) {
  if (options.argv.empty()) return make_error("a terminal needs a program to run");
  if (options.rows <= 0 || options.cols <= 0 || options.rows > 1000 || options.cols > 1000)
    return make_error("a terminal of " + std::to_string(options.cols) + "x" +
                      std::to_string(options.rows) + " is not between 1x1 and 1000x1000");
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return make_error(errno_text("posix_openpt"));
  char name[128];
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0 ||
      ::ptsname_r(master, name, sizeof name) != 0) {
    auto e = errno_text("ptsname");
    ::close(master);
    return make_error(e);
  }
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(options.rows);
  ws.ws_col = static_cast<unsigned short>(options.cols);
  ::ioctl(master, TIOCSWINSZ, &ws);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    auto e = errno_text("pipe");
    ::close(master);
    return make_error(e);
  }
  // Everything the child needs, made before fork: it may not allocate.
  std::vector<char*> argv, envp;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const char* path = options.program.empty() ? argv[0] : options.program.c_str();
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    auto e = errno_text("fork");
    ::close(master), ::close(wake[0]), ::close(wake[1]);
    return make_error(e);
  }
  if (pid == 0) {
    // The child: a session of its own whose controlling tty is the terminal.
    ::prctl(PR_SET_PDEATHSIG, SIGHUP);
    if (::getppid() != parent) ::_exit(129);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU})
      ::signal(s, SIG_DFL);
    ::setsid();
    int slave = ::open(name, O_RDWR);
    if (slave < 0) ::_exit(127);
    ::ioctl(slave, TIOCSCTTY, 0);
    ::dup2(slave, 0), ::dup2(slave, 1), ::dup2(slave, 2);
    // Nothing else of the node's: a descriptor left open (its output pipe,
    // a socket) would be held by whatever the shell starts, as long as that
    // lives: a node's parent reading its output to the end would wait on a
    // background job started in a terminal.
    ::syscall(SYS_close_range, 3, ~0U, 0);
    if (cwd && ::chdir(cwd) != 0) {
      static const char msg[] = "atl: cannot enter the working directory; staying in /\r\n";
      (void)!::write(2, msg, sizeof msg - 1);
      (void)!::chdir("/");
    }
    ::execve(path, argv.data(), envp.data());
    static const char msg[] = "atl: cannot start the terminal's shell\r\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  return std::unique_ptr<PtySession>(new PtySession(master, wake[0], wake[1], pid));
}

PtySession::~PtySession() {
  if (!reaped_) hang_up();
  ::close(master_);
  ::close(wake_read_);
  ::close(wake_write_);
}

Expected<std::string> PtySession::read(std::size_t max, int timeout_ms) {
  pollfd fds[2] = {{master_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
  int n = ::poll(fds, 2, timeout_ms);
  if (n < 0 && errno != EINTR) return make_error(errno_text("poll"));
  if (n <= 0) return std::string();
  if (fds[1].revents) {
    char drain[64];
    while (::read(wake_read_, drain, sizeof drain) > 0) {
    }
    if (!fds[0].revents) return std::string();
  }
  std::string out(max, '\0');
  ssize_t got = ::read(master_, out.data(), max);
  if (got > 0) {
    out.resize(static_cast<std::size_t>(got));
    return out;
  }
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return std::string();
  // EIO: no process holds the terminal any more.
  return make_error("the terminal's shell has ended");
}

void PtySession::wake() { (void)!::write(wake_write_, "w", 1); }

Status PtySession::write(std::string_view bytes, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!bytes.empty()) {
    pollfd p{master_, POLLOUT, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0)
      return make_error(std::to_string(bytes.size()) +
                        " bytes of input were dropped: the terminal takes no more");
    ssize_t n = ::write(master_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return make_error(errno_text("the terminal's input"));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Ok{};
}

Status PtySession::resize(int rows, int cols) {
  if (rows <= 0 || cols <= 0 || rows > 1000 || cols > 1000)
    return make_error("a terminal of " + std::to_string(cols) + "x" + std::to_string(rows) +
                      " is not between 1x1 and 1000x1000");
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  if (::ioctl(master_, TIOCSWINSZ, &ws) != 0) return make_error(errno_text("TIOCSWINSZ"));
  return Ok{};  // the kernel sends the shell SIGWINCH
}

void PtySession::signal_hang_up() {
  if (reaped_) return;
  signal_session(pid_, {SIGHUP, SIGCONT});  // a stopped job hears the hang-up too
}

ExitStatus PtySession::hang_up(int grace_ms) {
  if (reaped_) return status_;
  signal_hang_up();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      signal_session(pid_, {SIGKILL});
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  reaped_ = true;
  status_ = decode_wait_status(status);
  return status_;
}

ExitStatus PtySession::wait() {
  if (reaped_) return status_;
  // The terminal ended: the shell has left it, or is about to exit. A shell
  // that closed its terminal yet lives on is hung up after a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_ = decode_wait_status(status);
      return status_;
    }
    if (r < 0) {
      reaped_ = true;
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return hang_up();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace atl::os
