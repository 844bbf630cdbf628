#include "atl/os/child_process.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

extern char** environ;

namespace atl::os {

std::string ExitStatus::describe() const {
  if (signal == 0) return "exit code " + std::to_string(code);
  const char* name = sigabbrev_np(signal);
  return "killed by signal " + std::to_string(signal) +
         (name ? " (SIG" + std::string(name) + ")" : "");
}

std::string ExitStatus::ended() const {
  return (signal == 0 ? "ended with " : "was ") + describe();
}

ExitStatus decode_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
    s.code = 128 + s.signal;
  }
  return s;
}

namespace {

constexpr int kOutputPipeBytes = 256 * 1024;  // = PumpOptions::chunk_bytes
// Pipe buffers count against their user's allowance (fs.pipe-user-pages-soft,
// 64 MiB by default, shared by every process of the uid, and in containers
// without user namespaces by every container's root): past it the kernel
// gives each new pipe of that user 2 pages. So at most this many output pipes
// of this process are enlarged at a time (2,048 pages); the others keep the
// default 64 KiB.
constexpr int kMaxEnlargedPipes = 32;
std::atomic<int> g_enlarged_pipes{0};

// Only async-signal-safe calls between fork and exec: report errno and die.
[[noreturn]] void child_fail(int report_fd, int step) {
  int payload[2] = {step, errno};
  ssize_t ignored = ::write(report_fd, payload, sizeof payload);
  (void)ignored;
  _exit(127);
}

void set_disposition(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  ::sigaction(sig, &sa, nullptr);
}

void kill_own_group(int) { ::kill(0, SIGKILL); }

// --- The guard's sweep. It runs in a forked child of a threaded process (and
// in signal handlers), so: raw syscalls and stack buffers only, no malloc.

struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// The umask children get (keep_own_files_private() sets the process's own).
mode_t g_children_umask = 022;
bool g_children_umask_set = false;

volatile pid_t g_inner = 0;  // the command: reaped by the guard's main loop only
rlimit g_core_limit{};       // the command's core limit (the guard's own soft limit is 0)

// Reads ppid and process group of `pid` from /proc/<pid>/stat.
bool read_stat(pid_t pid, pid_t* ppid, pid_t* pgrp, char* state) {
  char path[32] = "/proc/";
  char digits[16];
  int n = 0;
  for (pid_t v = pid; v > 0 && n < 15; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  int at = 6;
  while (n > 0) path[at++] = digits[--n];
  const char* tail = "/stat";
  for (int i = 0; tail[i]; ++i) path[at++] = tail[i];
  path[at] = 0;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got <= 0) return false;
  buf[got] = 0;
  // "pid (comm) S ppid pgrp ...": comm may hold anything, so from the last ')'.
  char* p = nullptr;
  for (char* c = buf; *c; ++c)
    if (*c == ')') p = c;
  if (!p || p[1] != ' ' || !p[2]) return false;
  *state = p[2];
  p += 3;
  long fields[2] = {0, 0};
  for (long& f : fields) {
    while (*p == ' ') ++p;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') f = f * 10 + (*p++ - '0');
  }
  *ppid = static_cast<pid_t>(fields[0]);
  *pgrp = static_cast<pid_t>(fields[1]);
  return true;
}

volatile sig_atomic_t g_stopping = 0;      // the group was sent a stop (SIGTERM/SIGINT)
volatile sig_atomic_t g_orphan_ended = 0;  // a process below the command was reaped...
volatile int g_orphan_status = 0;          // ...with this wait status (the last one)

// A process below the command ended with `status` (on_stop forgets those
// that ended before a stop).
void note_orphan_end(int status) {
  g_orphan_status = status;
  g_orphan_ended = 1;
}

// Whether `pid` (our child) was reaped now.
bool reap(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return false;
  note_orphan_end(status);
  return true;
}

// Sends `sig` (0: none, only count) to every process that is our child (the
// guard is a subreaper, so an orphan anywhere below us becomes one, setsid or
// not) or in our group, and reaps the children that are dead (but never the
// command: the main loop waits for it). Returns how many were still there.
int signal_descendants(int sig) {
  pid_t self = ::getpid();
  pid_t group = ::getpgrp();
  int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int found = 0;
  char buf[4096];
  long n;
  while ((n = ::syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(buf + off);
      off += d->d_reclen;
      pid_t pid = 0;
      const char* c = d->d_name;
      for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
      if (*c != 0 || pid <= 0 || pid == self) continue;
      pid_t ppid = 0, pgrp = 0;
      char state = 0;
      if (!read_stat(pid, &ppid, &pgrp, &state)) continue;
      bool mine = ppid == self;
      if (!mine && (pgrp != group || state == 'Z')) continue;  // others reap their zombies
      if (state == 'Z') {
        // Dead already: reap it (the command is left to the main loop's
        // waitpid). A multi-threaded process shows 'Z' while its other
        // threads still exit, and cannot be reaped yet: it still counts, or
        // the guard left it behind as a zombie of whoever adopted it next
        // (atl-burn under a local worker's guard, after every stop).
        if (pid != g_inner && mine && !reap(pid)) ++found;
        continue;
      }
      ++found;
      if (sig != 0) ::kill(pid, sig);
      if (mine && pid != g_inner) reap(pid);
    }
  }
  ::close(dir);
  return found;
}

int kill_descendants() { return signal_descendants(SIGKILL); }

// Until nothing below us is left (bounded: 10 s).
void sweep() {
  for (int round = 0; round < 400 && kill_descendants() > 0; ++round) {
    timespec pause{0, 25 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
}

// The node agent died (pdeathsig): nothing of this rank may outlive it.
void on_parent_death(int) {
  sweep();
  _exit(128 + SIGKILL);
}

static_assert(std::atomic<std::int64_t>::is_always_lock_free,
              "the lease is shared across processes");

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// Waits for the command, and with a lease, kills its tree once the lease runs
// out. Returns the command's wait status.
// Reaps every child that has ended: orphans adopted by this subreaper would
// stay zombies for as long as the command runs (a local worker's guard lives
// as long as its workernode). True, with its status, once the command ended.
bool reap_ended(pid_t inner, int* status, bool block) {
  while (true) {
    int st = 0;
    pid_t p = ::waitpid(-1, &st, block ? 0 : WNOHANG);
    if (p == inner) {
      *status = st;
      return true;
    }
    if (p > 0) {
      note_orphan_end(st);
      continue;
    }
    if (p < 0 && errno == EINTR) continue;
    if (p < 0 && errno == ECHILD) {
      *status = 255 << 8;  // cannot happen (the command is ours, unreaped): never wait for ever
      return true;
    }
    return false;  // nothing more has ended yet
  }
}

int wait_for_command(pid_t inner, const Lease* lease) {
  int status = 0;
  if (lease) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, inner, 0));
    while (true) {
      if (reap_ended(inner, &status, false)) {
        if (pidfd >= 0) ::close(pidfd);
        return status;
      }
      if (pidfd >= 0) {
        pollfd p{pidfd, POLLIN, 0};
        ::poll(&p, 1, 100);  // the command ended, or 100 ms: look again
      } else {
        // No pidfd (an old kernel): look every 20 ms.
        timespec pause{0, 20 * 1000 * 1000};
        ::nanosleep(&pause, nullptr);
      }
      if (lease->expired()) {
        // The node froze or lost its head: nothing of this rank may go on.
        sweep();
        break;
      }
    }
    if (pidfd >= 0) ::close(pidfd);
  }
  while (!reap_ended(inner, &status, true)) {
  }
  return status;
}

// ChildProcess::kill_tree(): end the command and everything it started now.
void on_kill_tree(int) { sweep(); }

// A stop reached the group: the command's end is no longer the rank's end.
// Only what ends after the stop speaks for the rank.
void on_stop(int) {
  if (!g_stopping) g_orphan_ended = 0;
  g_stopping = 1;
}

// After a stop, the command (often a shell wrapper that SIGTERM ends at once)
// may end before what it started: a Python rank still saving its checkpoint
// in its SIGTERM handler. The rank's grace belongs to the whole group, so the
// guard waits for everything below it to end by itself; the owner's grace
// timer (kill_tree, SIGUSR2) or an expired lease ends the wait. Orphans that
// left the group (setsid) were never signalled: they get the stop too.
void wait_for_the_rest(const Lease* lease) {
  signal_descendants(SIGTERM);  // those in the group had it: a second one is harmless
  signal_descendants(SIGCONT);  // a stopped one takes its SIGTERM now, not after the grace
  while (signal_descendants(0) > 0) {
    if (lease && lease->expired()) return;  // the sweep that follows ends them
    timespec pause{0, 20 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
}

// The child forks once more: this first process stays as a guard in the new
// group while the second execs the command. pdeathsig only reaches a direct
// child, so the guard turns "my parent died" into SIGKILL for everything
// below it; being a child subreaper, it also inherits whatever the rank
// orphans (setsid daemons included) and kills that too when the rank ends.
void become_guard(pid_t parent) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  set_disposition(SIGUSR1, on_parent_death);
  set_disposition(SIGUSR2, on_kill_tree);
  ::prctl(PR_SET_PDEATHSIG, SIGUSR1);
  if (::getppid() != parent) kill_own_group(0);  // the parent died before prctl took
  // A stop (SIGTERM/SIGINT to the group) is for the command; the guard stays
  // to report how it ended, and notes it: from then on it waits for the group.
  set_disposition(SIGTERM, on_stop);
  set_disposition(SIGINT, on_stop);
  // The guard never dumps core: a crashed rank's core file is the user's evidence.
  ::getrlimit(RLIMIT_CORE, &g_core_limit);
  rlimit no_core{0, g_core_limit.rlim_max};
  ::setrlimit(RLIMIT_CORE, &no_core);
}

[[noreturn]] void exec_command(char** argv, char** envp, int report_fd);

// In the guard: starts the command's process, waits for it and ends the same
// way. Never returns.
[[noreturn]] void run_guarded(char** argv, char** envp, int report_fd, const Lease* lease) {
  // vfork: the guard is single-threaded, and the child only resets its own
  // signal dispositions and execs (or _exits) without returning from here.
  pid_t inner = ::vfork();
  if (inner < 0) child_fail(report_fd, 4);
  if (inner == 0) {
    set_disposition(SIGTERM, SIG_DFL);
    set_disposition(SIGINT, SIG_DFL);
    set_disposition(SIGUSR1, SIG_DFL);
    set_disposition(SIGUSR2, SIG_DFL);
    // The guard killed from outside (kill -9 of a local worker's wrapper):
    // the command goes with it instead of running on unwatched (a second
    // workernode for the same pod then looped on "already joined").
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The command dumps core as the node would have let it.
    ::setrlimit(RLIMIT_CORE, &g_core_limit);
    exec_command(argv, envp, report_fd);
  }
  g_inner = inner;
  ::close(report_fd);  // the exec's CLOEXEC copy in `inner` tells the parent
  int status = wait_for_command(inner, lease);
  if (g_stopping) {
    wait_for_the_rest(lease);
    // A wrapper the stop signal ended speaks for nothing: the rank ended as
    // the last process of its tree did (the handler's exit, or the SIGKILL
    // of an expired grace).
    bool wrapper_stopped =
        WIFSIGNALED(status) && (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT);
    if (wrapper_stopped && g_orphan_ended) status = g_orphan_status;
  }
  // The rank ended: whatever it left behind, in its group or not, goes too.
  sweep();
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    set_disposition(sig, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, 0);
    ::kill(::getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 255);
}

[[noreturn]] void exec_command(char** argv, char** envp, int report_fd) {
  ::execve(argv[0], argv, envp);
  if (errno == ENOENT && !strchr(argv[0], '/')) {
    // execve does no PATH search: do it with the child's own PATH.
    const char* path = nullptr;
    for (char** e = envp; *e; ++e)
      if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    char full[PATH_MAX];
    while (*path) {
      const char* colon = strchr(path, ':');
      size_t len = colon ? static_cast<size_t>(colon - path) : strlen(path);
      if (len + strlen(argv[0]) + 2 < sizeof full) {
        memcpy(full, path, len);
        full[len] = '/';
        strcpy(full + len + 1, argv[0]);
        ::execve(full, argv, envp);
      }
      if (!colon) break;
      path = colon + 1;
    }
  }
  child_fail(report_fd, 3);
}

const char* step_name(int step) {
  switch (step) {
    case 1:
      return "redirect output";
    case 2:
      return "change to working directory";
    case 3:
      return "exec";
    case 4:
      return "fork";
    default:
      return "prepare";
  }
}

}  // namespace

Expected<ChildProcess> ChildProcess::spawn(const SpawnRequest& req) {
  if (req.argv.empty()) return make_error("spawn: empty command line");
  // Everything the child needs is built before fork: no allocation after it.
  std::vector<char*> argv, envp;
  for (const auto& a : req.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : req.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int out_file = -1;
  bool enlarged = false;  // out_pipe holds kOutputPipeBytes
  if (req.output == OutputMode::pipe) {
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
      return make_error(std::string("pipe: ") + strerror(errno));
    // A 64 KiB pipe (the default) makes a fast writer and the pump take turns
    // every 64 KiB: a wake-up, a read and a log message each. 256 KiB (the
    // pump's chunk) lets it read whole chunks. Best effort: past the user's
    // pipe-buffer allowance the kernel refuses, and the default stays.
    if (g_enlarged_pipes.fetch_add(1) < kMaxEnlargedPipes &&
        ::fcntl(out_pipe[0], F_SETPIPE_SZ, kOutputPipeBytes) >= 0)
      enlarged = true;
    else
      --g_enlarged_pipes;
  } else if (req.output == OutputMode::file) {
    out_file = ::open(req.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_file < 0) {
      return make_error("cannot open " + req.output_file + ": " + strerror(errno));
    }
  }
  // Before there is a child to own them: the output's descriptors and slot.
  auto give_back_output = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], out_file})
      if (fd >= 0) ::close(fd);
    if (enlarged) --g_enlarged_pipes;
  };
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    give_back_output();
    return make_error(std::string("pipe: ") + strerror(err));
  }

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    give_back_output();
    ::close(report[0]);
    ::close(report[1]);
    return make_error(std::string("fork: ") + strerror(err));
  }
  if (pid == 0) {
    ::close(report[0]);
    if (req.new_process_group) ::setpgid(0, 0);
    const bool guarded = req.kill_with_parent && req.new_process_group;
    if (guarded) {
      become_guard(parent);
    } else if (req.kill_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(127);
    }
    // Undo what the parent may have set: blocked signals, ignored SIGPIPE and
    // the private umask of atl's own files.
    if (g_children_umask_set) ::umask(g_children_umask);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    set_disposition(SIGPIPE, SIG_DFL);
    int out = req.output == OutputMode::pipe ? out_pipe[1] : out_file;
    if (out >= 0) {
      if (::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) child_fail(report[1], 1);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!req.working_dir.empty() && ::chdir(req.working_dir.c_str()) != 0) child_fail(report[1], 2);
    // Keep only 0-2, the control channel at 3 and the report pipe (CLOEXEC):
    // no actor sockets leak into user code.
    int report_fd = report[1];
    int first_closed = 3;
    if (req.control_fd >= 0) {
      if (report_fd == 3) report_fd = ::fcntl(report_fd, F_DUPFD_CLOEXEC, 4);
      if (report_fd < 0) child_fail(report[1], 1);
      bool placed = req.control_fd == 3 ? ::fcntl(3, F_SETFD, 0) == 0  // keep it across exec
                                        : ::dup2(req.control_fd, 3) == 3;
      if (!placed) child_fail(report_fd, 1);
      first_closed = 4;
    }
    for (int fd = first_closed; fd < report_fd; ++fd) ::close(fd);
    ::syscall(SYS_close_range, report_fd + 1, ~0U, 0);
    if (guarded) run_guarded(argv.data(), envp.data(), report_fd, req.lease);
    exec_command(argv.data(), envp.data(), report_fd);
  }

  ::close(report[1]);
  if (out_pipe[1] >= 0) ::close(out_pipe[1]);
  if (out_file >= 0) ::close(out_file);
  // Settle the process group from both sides: no window where signal() misses it.
  if (req.new_process_group) ::setpgid(pid, pid);

  int payload[2];
  ssize_t n;
  do {
    n = ::read(report[0], payload, sizeof payload);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);

  ChildProcess child;
  child.pid_ = pid;
  child.own_group_ = req.new_process_group;
  child.guarded_ = req.kill_with_parent && req.new_process_group;
  child.output_fd_ = out_pipe[0];
  child.enlarged_pipe_ = enlarged;
  if (n == static_cast<ssize_t>(sizeof payload)) {
    child.wait();
    return make_error("cannot " + std::string(step_name(payload[0])) + " for '" + req.argv[0] +
                      "': " + strerror(payload[1]));
  }
  child.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept { *this = std::move(o); }

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    close_output();
    if (pidfd_ >= 0) ::close(pidfd_);
    pid_ = o.pid_;
    output_fd_ = o.output_fd_;
    pidfd_ = o.pidfd_;
    own_group_ = o.own_group_;
    guarded_ = o.guarded_;
    enlarged_pipe_ = o.enlarged_pipe_;
    status_ = o.status_;
    o.pid_ = -1;
    o.output_fd_ = -1;
    o.enlarged_pipe_ = false;
    o.pidfd_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  close_output();
  if (pidfd_ >= 0) ::close(pidfd_);
}

void ChildProcess::close_output() {
  if (output_fd_ >= 0) ::close(output_fd_);
  output_fd_ = -1;
  if (enlarged_pipe_) --g_enlarged_pipes;
  enlarged_pipe_ = false;
}

// The guard's "kill everything below you now" signal (its handler: on_kill_tree).
constexpr int kKillTreeSignal = SIGUSR2;

void ask_guard_to_kill_tree(pid_t guard) {
  if (guard > 0) ::kill(guard, kKillTreeSignal);
}

void ChildProcess::kill_tree() {
  if (pid_ <= 0 || status_) return;
  if (guarded_) {
    // The guard kills everything below it, setsid escapees included, then
    // ends as the command did. Bounded: then the whole group the hard way.
    ask_guard_to_kill_tree(pid_);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!try_wait() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  signal(SIGKILL);
}

void ChildProcess::signal(int sig) const {
  if (pid_ <= 0) return;
  if (own_group_) {
    // The group can outlive its leader (background children); a reaped leader's
    // group id stays reserved while any member lives.
    ::kill(-pid_, sig);
  } else if (!status_) {
    ::kill(pid_, sig);
  }
}

std::optional<ExitStatus> ChildProcess::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) status_ = decode_wait_status(st);
  return status_;
}

ExitStatus ChildProcess::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(ExitStatus{});
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? decode_wait_status(st) : ExitStatus{255, 0};
  return *status_;
}

Expected<std::shared_ptr<Lease>> Lease::create(std::chrono::milliseconds timeout) {
  void* page = ::mmap(nullptr, sizeof(std::atomic<std::int64_t>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return make_error(std::string("lease: mmap: ") + strerror(errno));
  auto* stamp = new (page) std::atomic<std::int64_t>(monotonic_ns());
  return std::shared_ptr<Lease>(new Lease(stamp, timeout));
}

Lease::~Lease() { ::munmap(stamp_, sizeof(std::atomic<std::int64_t>)); }

void Lease::renew() { stamp_->store(monotonic_ns(), std::memory_order_relaxed); }

void Lease::revoke() { stamp_->store(INT64_MIN / 2, std::memory_order_relaxed); }

bool Lease::expired() const {
  std::int64_t age = monotonic_ns() - stamp_->load(std::memory_order_relaxed);
  return age > static_cast<std::int64_t>(timeout_.count()) * 1000000;
}

void keep_own_files_private() {
  g_children_umask = ::umask(077);
  g_children_umask_set = true;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string executable_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace atl::os
