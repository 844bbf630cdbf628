// PtySession: a shell on a pseudo-terminal, as sshd or `kubectl exec -it`
// start one: its own session with the terminal as its controlling tty, the
// window size the browser has, the environment it is given. The web
// terminal's node side; plain POSIX (posix_openpt), no CAF.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/os/child_process.hpp"

namespace atl::os {

struct PtyOptions {
  std::string program;            // the path to run; empty: argv[0]
  std::vector<std::string> argv;  // as the program sees it
  std::vector<std::string> env;   // "NAME=value"; the whole environment
  std::string cwd;                // empty: stay where the process is
  int rows = 24;
  int cols = 80;
};

// The shell a terminal runs: $SHELL when it is an executable, else bash,
// else sh; interactive, not a login shell (as `kubectl exec -it POD -- bash`
// starts one): a login shell's /etc/profile would reset PATH, and the pod's
// environment is the point.
void use_shell(PtyOptions& options, const char* shell_env);

class PtySession {
 public:
  static Expected<std::unique_ptr<PtySession>> start(const PtyOptions& options);
  ~PtySession();  // hangs up (SIGHUP, then SIGKILL) and reaps
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;

  pid_t pid() const { return pid_; }
  // What the terminal printed: up to `max` bytes once some are there,
  // waiting at most timeout_ms (-1: until some come, or wake()). Empty: none
  // yet. An error: the terminal has ended (every process holding it left).
  Expected<std::string> read(std::size_t max, int timeout_ms);
  // Ends a read() that is waiting, from another thread.
  void wake();
  // Keystrokes; a full terminal's input queue blocks the writer: the bytes
  // that did not fit after `timeout_ms` are dropped and the error says so.
  Status write(std::string_view bytes, int timeout_ms = 2000);
  Status resize(int rows, int cols);
  // SIGHUP to every process of the terminal's session (its background jobs
  // too, as a closed terminal window does), SIGKILL to them after `grace_ms`
  // if the shell still runs; the shell's exit status.
  ExitStatus hang_up(int grace_ms = 500);
  // hang_up()'s first step alone: SIGHUP (and SIGCONT) to the session, no
  // wait; for many terminals ending at once, before each one's hang_up().
  void signal_hang_up();
  // The shell's exit status once it has ended (after read() said so).
  ExitStatus wait();

 private:
  PtySession(int master, int wake_read, int wake_write, pid_t pid)
      : master_(master), wake_read_(wake_read), wake_write_(wake_write), pid_(pid) {}
  int master_;
  int wake_read_, wake_write_;
  pid_t pid_;
  bool reaped_ = false;
  ExitStatus status_;
};

}  // namespace atl::os
