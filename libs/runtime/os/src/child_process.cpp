#include "atl/os/child_process.hpp"

#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "atl/os/guard_protocol.h"
#include "atl/os/process_title.hpp"
#include "proc_stat.hpp"

extern char** environ;

namespace atl::os {

std::string ExitStatus::describe() const {
  // A shell (`sh -c`, a launcher script) says 128+N when its command was
  // killed by signal N: named, as the signal itself would be.
  if (signal == 0 && code > 128 && code < 128 + 32) {
    const char* name = sigabbrev_np(code - 128);
    if (name)
      return "exit code " + std::to_string(code) + " (128+" + std::to_string(code - 128) +
             ": a shell's word for its command killed by SIG" + name + ")";
  }
  // A shell's words for a command it could not run (POSIX: 127 not found,
  // 126 found but not executable): the commonest first mistake, a typo in
  // the entrypoint or a script without its execute bit.
  if (signal == 0 && code == 127)
    return "exit code 127 (a shell's word for a command not found: check the command's first "
           "word and PATH on the pod)";
  if (signal == 0 && code == 126)
    return "exit code 126 (a shell's word for a command it cannot run: chmod +x it, or name its "
           "interpreter, e.g. bash train.sh)";
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

// The umask children get (keep_own_files_private() sets the process's own).
mode_t g_children_umask = 022;
bool g_children_umask_set = false;

const char* step_name(int step) {
  switch (step) {
    case ATL_STEP_OUTPUT:
      return "redirect output";
    case ATL_STEP_CHDIR:
      return "change to working directory";
    case ATL_STEP_EXEC:
      return "exec";
    case ATL_STEP_FORK:
      return "fork";
    case ATL_STEP_ARGS:
      return "start atl-guard (bad arguments)";
    case ATL_STEP_PID_NAMESPACE:
      return "mount /proc in its PID namespace (or enter its pod's)";
    default:
      return "prepare";
  }
}

// What the vfork child needs, all built before it: it may only make system
// calls (it runs on the spawning thread's memory until it execs).
struct GuardStart {
  const char* guard = nullptr;
  char** argv = nullptr;
  char** envp = nullptr;
  int output = -1;   // the command's stdout/stderr, -1: the spawner's
  int control = -1;  // for fd 3, -1: none
  int report = -1;
  int lease = -1;
  const char* working_dir = nullptr;  // nullptr: the spawner's
  bool guarded = true;                // false: exec argv[0] itself, with pdeathsig
  bool own_pid_namespace = false;     // unguarded: PID 1 of a namespace of its own
  int join_mounts = -1;               // SpawnRequest::pod_namespace's mount namespace
  pid_t parent = 0;                   // 0: the spawner is outside the child's PID namespace
};

// Only system calls between vfork and exec: report errno and die.
[[noreturn]] void child_fail(int report_fd, int step) {
  int payload[2] = {step, errno};
  ssize_t ignored = ::write(report_fd, payload, sizeof payload);
  (void)ignored;
  _exit(127);
}

// In the child: the guard's group, descriptors and directory. Every source
// descriptor first moves above the numbers it may be moved onto, so no dup2
// overwrites a source still to be placed. Returns the report pipe's end.
int place_child(const GuardStart& s) {
  ::setpgid(0, 0);
  if (g_children_umask_set) ::umask(g_children_umask);
  constexpr int kHigh = 16;
  int report = ::fcntl(s.report, F_DUPFD_CLOEXEC, kHigh);
  if (report < 0) child_fail(s.report, ATL_STEP_OUTPUT);  // said where it still is
  auto high = [&](int fd) {
    if (fd < 0) return -1;
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, kHigh);
    if (moved < 0) child_fail(report, ATL_STEP_OUTPUT);
    return moved;
  };
  const int output = high(s.output), control = high(s.control), lease = high(s.lease);
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || ::dup2(devnull, 0) < 0) child_fail(report, ATL_STEP_OUTPUT);
  if (output >= 0 && (::dup2(output, 1) < 0 || ::dup2(output, 2) < 0))
    child_fail(report, ATL_STEP_OUTPUT);
  if (control >= 0 && ::dup2(control, 3) < 0) child_fail(report, ATL_STEP_OUTPUT);
  if (lease >= 0 && ::dup2(lease, ATL_GUARD_LEASE_FD) < 0) child_fail(report, ATL_STEP_OUTPUT);
  if (::dup2(report, ATL_GUARD_REPORT_FD) < 0) child_fail(report, ATL_STEP_OUTPUT);
  report = ATL_GUARD_REPORT_FD;
  // Its pod's mounts (its /proc) before the working dir: entering them sets
  // the directory to their root.
  if (s.join_mounts >= 0 && ::setns(s.join_mounts, CLONE_NEWNS) != 0)
    child_fail(report, ATL_STEP_PID_NAMESPACE);
  if (s.working_dir && ::chdir(s.working_dir) != 0) child_fail(report, ATL_STEP_CHDIR);
  // Keep only 0-2, the control channel at 3, the report pipe and the lease:
  // no actor sockets leak into user code.
  if (control < 0) ::close(3);
  ::syscall(SYS_close_range, ATL_GUARD_LEASE_FD + (lease >= 0 ? 1 : 0), ~0U, 0);
  return report;
}

// Unguarded: what a guard would do for its command, done in the child.
// Default dispositions (ours are copies here; SIGPIPE is ignored by the
// spawner) before the mask opens, so no handler of ours ever runs in it.
void become_unguarded(const GuardStart& s, int report) {
  ::fcntl(report, F_SETFD, FD_CLOEXEC);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The spawner died before prctl took. (PID 1 of a namespace of its own
  // sees no parent: getppid() is 0 there, whoever it is; a child started
  // into a pod's namespace sees 0 while its spawner lives.)
  if (!s.own_pid_namespace && ::getppid() != s.parent) _exit(127);
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Makes this new mount namespace's /proc that of the new PID namespace this
// process is PID 1 of (its mounts private first: nothing propagates back to
// the host's). Only system calls: it runs in a vfork-like child.
bool mount_own_proc() {
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
         ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
}

// In the child of a spawn with SpawnRequest::own_pid_namespace (PID 1 of
// the namespace its spawner's thread made for it, see start_guard): a mount
// namespace of its own, where /proc is its PID namespace's.
void enter_own_mounts(const GuardStart& s, int report) {
  if (!s.own_pid_namespace) return;
  if (::unshare(CLONE_NEWNS) != 0 || !mount_own_proc()) child_fail(report, ATL_STEP_PID_NAMESPACE);
}

// The spawning thread's children are born into a new PID namespace while
// this lives (namespaces are per thread: the process's other threads, and
// this one after, fork into their own as before). fork() starts it, as PID 1.
// Given a namespace's descriptor (a PodNamespace's), they are born into that
// one instead.
class NewPidNamespaceForChildren {
 public:
  explicit NewPidNamespaceForChildren(int join = -1) {
    back_ = ::open("/proc/thread-self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (back_ < 0) {
      error_ = errno;
      return;
    }
    if (join >= 0 ? ::setns(join, CLONE_NEWPID) != 0 : ::unshare(CLONE_NEWPID) != 0) {
      error_ = errno;
      ::close(back_);
      back_ = -1;
    }
  }
  ~NewPidNamespaceForChildren() {
    if (back_ < 0) return;
    ::setns(back_, CLONE_NEWPID);  // its own active namespace: always allowed
    ::close(back_);
  }
  NewPidNamespaceForChildren(const NewPidNamespaceForChildren&) = delete;
  NewPidNamespaceForChildren& operator=(const NewPidNamespaceForChildren&) = delete;
  int error() const { return error_; }

 private:
  int back_ = -1;
  int error_ = 0;
};

// In the vfork child: placed, then exec atl-guard (or, unguarded, the command).
[[noreturn]] void exec_guard(const GuardStart& s) {
  int report = place_child(s);
  enter_own_mounts(s, report);
  if (s.guarded) {
    ::execve(s.guard, s.argv, s.envp);
    child_fail(report, ATL_STEP_GUARD);
  }
  become_unguarded(s, report);
  ::execve(s.argv[0], s.argv, s.envp);
  child_fail(report, ATL_STEP_EXEC);
}

// In the forked child of a single-threaded spawner (SpawnRequest::
// instead_of_exec): placed as an unguarded command would be, its environment,
// name and title (process_title.hpp) those the exec would give, then the
// function instead of the exec.
// The report pipe's close says it started, as an exec's would.
[[noreturn]] void run_forked(const GuardStart& s, const SpawnRequest& req) {
  set_commands_namespace(nullptr);  // the spawner's pod is not the child's
  int report = place_child(s);
  enter_own_mounts(s, report);
  become_unguarded(s, report);
  ::clearenv();
  for (const auto& e : req.env) ::putenv(::strdup(e.c_str()));
  const std::string& path = req.argv[0];
  ::prctl(PR_SET_NAME, path.substr(path.rfind('/') + 1).c_str());
  set_process_title(req.argv);  // ps -f and pgrep -f see argv, as after an exec
  ::close(report);
  std::exit(req.instead_of_exec());
}

// vfork: no copy of this (large, threaded) process's page tables and no
// copy-on-write faults after it. Every signal stays blocked until the exec,
// so no handler of ours runs on our memory in the child; the guard unblocks.
// A function of its own: the child never returns from this frame. `forked`:
// a real fork that runs req.instead_of_exec (the spawner is single-threaded).
__attribute__((noinline)) pid_t start_guard(const GuardStart& start, const SpawnRequest& req,
                                            bool forked, int* error) {
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  if (forked) std::fflush(nullptr);  // nothing buffered here is written twice
  std::optional<NewPidNamespaceForChildren> own;
  if ((start.own_pid_namespace || req.pod_namespace) &&
      own.emplace(req.pod_namespace ? req.pod_namespace->pid_fd() : -1).error() != 0) {
    *error = own->error();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return -1;
  }
  pid_t pid = forked ? ::fork() : ::vfork();
  if (pid == 0) {
    if (forked) run_forked(start, req);
    exec_guard(start);
  }
  *error = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return pid;
}

}  // namespace

namespace {

Status try_pid_namespace() {
  std::optional<NewPidNamespaceForChildren> own;
  if (own.emplace().error() != 0) {
    const int err = own->error();
    if (err == EPERM) return make_error("making namespaces needs root (or CAP_SYS_ADMIN)");
    return make_error(std::string("this system refuses a new PID namespace (") + strerror(err) +
                      ")");
  }
  // PID 1 of the new namespace: its own mounts and /proc, then gone.
  pid_t pid = ::fork();
  if (pid == 0) _exit(::unshare(CLONE_NEWNS) == 0 && mount_own_proc() ? 0 : (errno & 0x7f) + 1);
  const int fork_errno = errno;
  own.reset();
  if (pid < 0)
    return make_error(std::string("cannot start a process in a new PID namespace (") +
                      strerror(fork_errno) + ")");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return make_error(std::string("cannot mount /proc in a new PID namespace (") +
                      (WIFEXITED(status) ? strerror(WEXITSTATUS(status) - 1) : "killed") + ")");
  return Ok{};
}

}  // namespace

Status pid_namespaces_available() {
  static const Status answer = try_pid_namespace();
  return answer;
}

bool single_threaded() {
  const auto fields = own_stat_fields();  // [17]: field 20, the number of threads
  return fields.size() > 17 && fields[17] == "1";
}

namespace {

// atl-guard beside this executable (headnode, workernode, the tests).
const std::string& guard_path() {
  static const std::string path = executable_dir() + "/" + ATL_GUARD_BINARY;
  return path;
}

}  // namespace

Expected<ChildProcess> ChildProcess::spawn(const SpawnRequest& req) {
  if (req.argv.empty()) return make_error("spawn: empty command line");
  const std::string& guard = guard_path();
  // Everything the child needs is built before vfork: no allocation after it.
  // A child started into a pod's namespace sees its spawner as 0 (outside).
  const std::string parent_text = std::to_string(req.pod_namespace ? 0 : ::getpid());
  const std::string lease_text = std::to_string(req.lease ? req.lease->timeout().count() : 0);
  std::vector<char*> argv, envp;
  if (req.guarded) {
    argv.push_back(const_cast<char*>(guard.c_str()));
    argv.push_back(const_cast<char*>(parent_text.c_str()));
    argv.push_back(const_cast<char*>(lease_text.c_str()));
    argv.push_back(const_cast<char*>("--"));
  } else if (req.lease || req.argv[0].find('/') == std::string::npos) {
    return make_error("spawn: an unguarded child takes no lease and an absolute path");
  }
  if (req.own_pid_namespace && req.guarded)
    return make_error("spawn: only an unguarded child gets a PID namespace of its own");
  if (req.own_pid_namespace && req.pod_namespace)
    return make_error("spawn: a child joins a pod's namespace or gets its own, not both");
  // Entering the pod's mounts moves the child to their root: it goes back to
  // where it would have started, by name (the same files there, /proc aside).
  std::string spawners_dir;
  if (req.pod_namespace && req.working_dir.empty()) {
    char here[PATH_MAX];
    if (!::getcwd(here, sizeof here)) return make_error(std::string("getcwd: ") + strerror(errno));
    spawners_dir = here;
  }
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

  GuardStart start;
  start.guard = guard.c_str();
  start.argv = argv.data();
  start.envp = envp.data();
  start.output = req.output == OutputMode::pipe ? out_pipe[1] : out_file;
  start.control = req.control_fd;
  start.report = report[1];
  start.lease = req.lease ? req.lease->fd() : -1;
  start.working_dir = !req.working_dir.empty() ? req.working_dir.c_str()
                      : !spawners_dir.empty()  ? spawners_dir.c_str()
                                               : nullptr;
  start.guarded = req.guarded;
  start.own_pid_namespace = req.own_pid_namespace;
  start.join_mounts = req.pod_namespace ? req.pod_namespace->mount_fd() : -1;
  start.parent = req.pod_namespace ? 0 : ::getpid();
  const bool forked = req.instead_of_exec && !req.guarded && single_threaded();
  int fork_errno = 0;
  pid_t pid = start_guard(start, req, forked, &fork_errno);
  if (pid < 0) {
    give_back_output();
    ::close(report[0]);
    ::close(report[1]);
    return make_error(std::string(req.own_pid_namespace ? "a new PID namespace: "
                                  : req.pod_namespace   ? "its pod's PID namespace: "
                                                        : "fork: ") +
                      strerror(fork_errno));
  }

  ::close(report[1]);
  if (out_pipe[1] >= 0) ::close(out_pipe[1]);
  if (out_file >= 0) ::close(out_file);
  // Settle the process group from both sides: no window where signal() misses it.
  ::setpgid(pid, pid);

  // The guard reports a failed start (its own or the command's exec) on the
  // pipe; its end closes unreported when the command's exec succeeded.
  int payload[2];
  ssize_t n;
  do {
    n = ::read(report[0], payload, sizeof payload);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);

  ChildProcess child;
  child.pid_ = pid;
  child.output_fd_ = out_pipe[0];
  child.enlarged_pipe_ = enlarged;
  child.guarded_ = req.guarded;
  if (n == static_cast<ssize_t>(sizeof payload)) {
    child.wait();
    if (payload[0] == ATL_STEP_GUARD)  // its exec failed: no guard where it should be
      return make_error("atl's process guard " + guard + " cannot be started (" +
                        strerror(payload[1]) +
                        "): it is built beside headnode and workernode and ships with them");
    return make_error("cannot " + std::string(step_name(payload[0])) + " for '" + req.argv[0] +
                      "': " + strerror(payload[1]));
  }
  child.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return child;
}

namespace {
std::atomic<const PodNamespace*> g_commands_namespace{nullptr};
}  // namespace

void set_commands_namespace(const PodNamespace* ns) { g_commands_namespace.store(ns); }
const PodNamespace* commands_namespace() { return g_commands_namespace.load(); }

Expected<std::unique_ptr<PodNamespace>> PodNamespace::start() {
  if (auto can = pid_namespaces_available(); !can) return make_error(can.error());
  SpawnRequest req;
  req.argv = {guard_path(), "--pod-init"};
  req.guarded = false;
  req.own_pid_namespace = true;
  req.output = OutputMode::file;
  req.output_file = "/dev/null";
  auto init = ChildProcess::spawn(req);
  if (!init) return make_error("a PID namespace for the head's own processes: " + init.error());
  const pid_t pid = init->pid();
  const std::string dir = "/proc/" + std::to_string(pid) + "/ns/";
  const int pid_fd = ::open((dir + "pid").c_str(), O_RDONLY | O_CLOEXEC);
  const int mount_fd = ::open((dir + "mnt").c_str(), O_RDONLY | O_CLOEXEC);
  if (pid_fd < 0 || mount_fd < 0) {
    const int err = errno;
    for (int fd : {pid_fd, mount_fd})
      if (fd >= 0) ::close(fd);
    ::kill(pid, SIGKILL);
    init->wait();
    return make_error("a PID namespace for the head's own processes: " + dir + ": " +
                      strerror(err));
  }
  init->close_output();
  // Reaped by the destructor, from the ChildProcess's pid alone.
  return std::unique_ptr<PodNamespace>(new PodNamespace(pid, pid_fd, mount_fd));
}

PodNamespace::~PodNamespace() {
  if (g_commands_namespace.load() == this) set_commands_namespace(nullptr);
  ::close(pid_fd_);
  ::close(mount_fd_);
  // Watched through a pidfd: its end is seen the moment it comes (a 10 ms
  // poll cost every head's exit ~10 ms, a fifth of a small job's teardown).
  const int ended = static_cast<int>(::syscall(SYS_pidfd_open, init_, 0));
  ::kill(init_, SIGKILL);
  // Its end waits until every process inside is reaped, those whose parent
  // is outside (this process's own children: the guards it started) by
  // their parent: waited for a moment (1 s), never blocked on (the owner
  // may be the one to reap them, later).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(init_, &st, WNOHANG);
    if (r == init_ || (r < 0 && errno != EINTR)) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (ended >= 0) {
      pollfd p{ended, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 10'000)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (ended >= 0) ::close(ended);
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept { *this = std::move(o); }

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    close_output();
    if (pidfd_ >= 0) ::close(pidfd_);
    pid_ = o.pid_;
    output_fd_ = o.output_fd_;
    pidfd_ = o.pidfd_;
    enlarged_pipe_ = o.enlarged_pipe_;
    guarded_ = o.guarded_;
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

void ask_guard_to_kill_tree(pid_t guard) {
  if (guard > 0) ::kill(guard, ATL_KILL_TREE_SIGNAL);
}

void ChildProcess::kill_tree() {
  if (pid_ <= 0 || status_) return;
  if (guarded_) {
    // The guard kills everything below it, setsid escapees included, then
    // ends as the command did. Bounded: then the whole group the hard way.
    ask_guard_to_kill_tree(pid_);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!try_wait()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      if (pidfd_ >= 0) {  // its end wakes us: no polling delay per stopped rank
        pollfd p{pidfd_, POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(left.count()) + 1);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  signal(SIGKILL);
}

// The group can outlive its leader (background children); a reaped leader's
// group id stays reserved while any member lives.
void ChildProcess::signal(int sig) const {
  if (pid_ > 0) ::kill(-pid_, sig);
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
  // A memfd, not anonymous shared memory: the guards are exec'd, and map it
  // from the descriptor they are handed (guard_protocol.hpp).
  int fd = ::memfd_create("atl-lease", MFD_CLOEXEC);
  if (fd < 0) return make_error(std::string("lease: memfd_create: ") + strerror(errno));
  if (::ftruncate(fd, sizeof(std::atomic<std::int64_t>)) != 0) {
    int err = errno;
    ::close(fd);
    return make_error(std::string("lease: ftruncate: ") + strerror(err));
  }
  void* page =
      ::mmap(nullptr, sizeof(std::atomic<std::int64_t>), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) {
    int err = errno;
    ::close(fd);
    return make_error(std::string("lease: mmap: ") + strerror(err));
  }
  auto* stamp = new (page) std::atomic<std::int64_t>(atl_monotonic_ns());
  return std::shared_ptr<Lease>(new Lease(fd, stamp, timeout));
}

Lease::~Lease() {
  ::munmap(stamp_, sizeof(std::atomic<std::int64_t>));
  ::close(fd_);
}

namespace {
constexpr std::int64_t kRevokedStamp = INT64_MIN / 2;
}  // namespace

void Lease::renew() {
  // A revoked lease stays revoked: its guards are killing their trees.
  std::int64_t stamp = stamp_->load(std::memory_order_relaxed);
  if (stamp == kRevokedStamp) return;
  stamp_->compare_exchange_strong(stamp, atl_monotonic_ns(), std::memory_order_relaxed);
}

void Lease::revoke() { stamp_->store(kRevokedStamp, std::memory_order_relaxed); }

bool Lease::expired() const {
  return atl_lease_expired(stamp_->load(std::memory_order_relaxed), timeout_.count());
}

void keep_own_files_private() {
  g_children_umask = ::umask(077);
  g_children_umask_set = true;
}

void use_few_malloc_arenas() { ::mallopt(M_ARENA_MAX, 2); }

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
