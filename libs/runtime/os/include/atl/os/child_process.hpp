// ChildProcess: a real OS process in a process group of its own, led by a
// guard (atl-guard, exec'd from a vfork) that kills the whole tree with the
// thread that spawned it; its stdout+stderr on one pipe (or a file).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::os {

struct ExitStatus {
  int code = 0;    // exit code when signal == 0
  int signal = 0;  // terminating signal, 0 when the process exited
  bool success() const { return signal == 0 && code == 0; }
  std::string describe() const;  // "exit code 3", "killed by signal 9 (SIGKILL)"
  std::string ended() const;     // "ended with exit code 3", "was killed by signal 9 (SIGKILL)"
};

ExitStatus decode_wait_status(int status);

enum class OutputMode {
  pipe,     // stdout and stderr share one pipe, readable from output_fd()
  file,     // both appended to output_file
  inherit,  // the parent's stdout/stderr
};

// A node's liveness lease, shared with the guards of the children it starts
// (a memfd each guard maps). The node renews it while
// it is alive and in touch with its head; a guard that finds it older than the
// timeout kills its command and everything below it, as if the node had died.
// So a frozen (SIGSTOPped, hung) node's ranks die by themselves within the
// timeout: the head may start a new attempt elsewhere without a split brain.
class Lease {
 public:
  static Expected<std::shared_ptr<Lease>> create(std::chrono::milliseconds timeout);
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  void renew();   // stamps now (CLOCK_MONOTONIC); nothing once revoked
  void revoke();  // guards find it expired at their next look
  std::chrono::milliseconds timeout() const { return timeout_; }
  bool expired() const;           // what the guards find
  int fd() const { return fd_; }  // the memfd the guards map (close-on-exec)

 private:
  Lease(int fd, std::atomic<std::int64_t>* stamp, std::chrono::milliseconds timeout)
      : fd_(fd), stamp_(stamp), timeout_(timeout) {}
  int fd_;
  std::atomic<std::int64_t>* stamp_;  // nanoseconds of CLOCK_MONOTONIC at the last renew
  std::chrono::milliseconds timeout_;
};

class PodNamespace;

// A child is SIGKILLed when the *thread* that spawned it dies: spawn from a
// thread that lives as long as the child should.
struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the complete environment, "K=V"
  std::string working_dir;       // empty: the parent's
  OutputMode output = OutputMode::pipe;
  std::string output_file;
  // A descriptor the child finds at fd 3 (control_channel.hpp); -1: none.
  // Everything else above stderr is closed in the child.
  int control_fd = -1;
  // The guard kills the command's tree when this lease
  // expires (it looks every 100 ms). The Lease must outlive the spawn call;
  // the guard keeps its own mapping of it.
  const Lease* lease = nullptr;
  // true: an atl-guard leads the child's group and takes its whole tree down
  // with the spawning thread (pdeathsig), setsid escapees included; see
  // atl-guard. false, for atl's own programs that guard their children
  // themselves (a local workernode): the child leads its group and gets the
  // pdeathsig itself, one process less. No lease then.
  bool guarded = true;
  // Unguarded only: in a single-threaded spawner, the child is a fork that
  // runs this and exits with what it returns, instead of exec'ing argv[0]
  // (argv[0]'s name is its name; env its environment; the same group,
  // descriptors and pdeathsig). It loads nothing: what this process loaded
  // is there. A spawner with threads execs argv[0] as usual.
  std::function<int()> instead_of_exec;
  // Unguarded only: the child is the first process (PID 1) of a PID
  // namespace of its own, in a mount namespace of its own where /proc is
  // that namespace's: `ps -ef` there sees the child and what it starts,
  // nothing else of the host (a local pod, as a container is). Its pid() is
  // the host's; pids inside are the namespace's. Signals from this side
  // reach it only where it handles them (SIGKILL and SIGSTOP always), and
  // its end ends everything inside. Never instead_of_exec (it execs).
  // Whether this host allows it: pid_namespaces_available().
  bool own_pid_namespace = false;
  // Guarded or not: the child (the guard and its command) starts inside
  // this namespace, as a process run in a pod's shell would (the head's own
  // pod: its driver, Ray's head). Its pid() is the host's. nullptr: the
  // spawner's namespace. Not with own_pid_namespace.
  const PodNamespace* pod_namespace = nullptr;
};

// A PID namespace with a /proc of its own that commands join
// (SpawnRequest::pod_namespace): the pod of the processes the head starts
// on its own host, so that `ps -ef`, `pkill -f python` or the guide's
// cleanup run there see them only, never the host's other jobs, as in a
// Kubernetes pod. Its first process (PID 1, `atl-guard --pod-init`) only
// reaps; its end ends everything inside, and it ends with the thread that
// started it or with this object.
class PodNamespace {
 public:
  // Needs pid_namespaces_available(); from a thread that lives as long as
  // the namespace should (the process's main thread).
  static Expected<std::unique_ptr<PodNamespace>> start();
  ~PodNamespace();  // SIGKILLs its first process: everything inside ends
  PodNamespace(const PodNamespace&) = delete;
  PodNamespace& operator=(const PodNamespace&) = delete;

  pid_t init_pid() const { return init_; }  // the host's number of its PID 1
  int pid_fd() const { return pid_fd_; }    // /proc/PID/ns/pid, for setns
  int mount_fd() const { return mount_fd_; }

 private:
  PodNamespace(pid_t init, int pid_fd, int mount_fd)
      : init_(init), pid_fd_(pid_fd), mount_fd_(mount_fd) {}
  pid_t init_;
  int pid_fd_;
  int mount_fd_;
};

// The namespace this process's own commands join (the executors' ranks,
// drivers and Ray nodes: os::SpawnRequest::pod_namespace); nullptr, the
// default: none, they start beside this process. The head sets it once, after
// its local pods started (a fork of it forgets it).
void set_commands_namespace(const PodNamespace* ns);
const PodNamespace* commands_namespace();

// Whether this process may start children with own_pid_namespace (root, or
// CAP_SYS_ADMIN, and a /proc it may mount): Ok, or why not, in words. Tried
// once with a real child (~1 ms); the answer is kept.
Status pid_namespaces_available();

// This process has one thread (a fork of it may run anything).
bool single_threaded();

class ChildProcess {
 public:
  // Starts the process; an exec or chdir failure in the child is reported here.
  static Expected<ChildProcess> spawn(const SpawnRequest& request);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // closes descriptors; never kills (the owner decides)

  pid_t pid() const { return pid_; }
  int output_fd() const { return output_fd_; }
  void close_output();
  int pidfd() const { return pidfd_; }  // readable once the process exited
  bool reaped() const { return status_.has_value(); }
  const std::optional<ExitStatus>& status() const { return status_; }

  // Signals the whole process group, guard included (it takes SIGTERM and
  // SIGINT as a stop: it then waits for the whole tree, see atl-guard).
  void signal(int sig) const;

  // Ends the command and everything it started, in its group or not (setsid
  // daemons): the guard sweeps its subtree (it is a child subreaper), then
  // the group gets SIGKILL. Blocks at most ~3 s.
  void kill_tree();

  std::optional<ExitStatus> try_wait();
  ExitStatus wait();

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int output_fd_ = -1;
  int pidfd_ = -1;
  bool enlarged_pipe_ = false;  // its output pipe counts against kMaxEnlargedPipes
  bool guarded_ = true;
  std::optional<ExitStatus> status_;
};

// Tells the guard leading a guarded child's group (its pid) to kill the
// command and everything below it now; returns at once (kill_tree() waits).
void ask_guard_to_kill_tree(pid_t guard);

// Everything this process creates from now on is private to its user (umask
// 077: files 0600, folders 0700): logs, the state store, the address, the
// job file. The processes it starts (ranks, drivers, local workers) get the
// umask it had before, so user code writes files as it always would. Call
// first thing in main, before any thread.
void keep_own_files_private();

// Every thread of a daemon (CAF's workers, detached actors) would get a malloc
// arena of its own, 132 KiB and up each, mostly idle: at most two. Call first
// thing in main, before any thread.
void use_few_malloc_arenas();

// The calling process's environment as "K=V" strings.
std::vector<std::string> current_environment();

// Directory holding the running executable (for finding sibling binaries).
std::string executable_dir();

}  // namespace atl::os
