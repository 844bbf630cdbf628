// atl-guard: leads one guarded child's process group (a rank, a helper
// command) and makes sure nothing of it outlives its owner.
//
// It is a child subreaper, so whatever the command orphans (setsid daemons
// included) becomes its child; it turns its owner's death (pdeathsig) and an
// expired node lease into SIGKILL for everything below it; it waits out a
// stopped rank's grace for the whole tree, not just the wrapper shell; and it
// ends as the command did. How it is started: atl/os/guard_protocol.h.
//
// It used to be a fork of the node agent: 3.5 MiB of RSS per rank, a copy of
// the agent's page tables per launch and copy-on-write faults in both. Now it
// is exec'd (from a vfork) and static, in C: built with musl where the
// machine has it (no CPU-feature probing at start, which costs ~0.2 ms of
// trapped CPUIDs per process in a VM, and less RSS), else with glibc. No
// allocation anywhere, raw syscalls and stack buffers only (parts run in
// signal handlers).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atl/os/guard_protocol.h"

extern char** environ;

static _Noreturn void fail(int step, int err) {
  int payload[2] = {step, err};
  ssize_t ignored = write(ATL_GUARD_REPORT_FD, payload, sizeof payload);
  (void)ignored;
  _exit(127);
}

static void set_disposition(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(sig, &sa, NULL);
}

static void pause_ms(long ms) {
  struct timespec pause = {0, ms * 1000 * 1000};
  nanosleep(&pause, NULL);
}

// --- Small text helpers (no stdio: parts run in signal handlers).

static char* put_str(char* at, const char* s) {
  while (*s) *at++ = *s++;
  *at = 0;
  return at;
}

static char* put_int(char* at, long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 23);
  while (n > 0) *at++ = digits[--n];
  *at = 0;
  return at;
}

// Parses a decimal at `*p`; advances it. False when there is none.
static bool take_int(const char** p, long* out) {
  if (**p < '0' || **p > '9') return false;
  long v = 0;
  while (**p >= '0' && **p <= '9') v = v * 10 + (*(*p)++ - '0');
  *out = v;
  return true;
}

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

static volatile pid_t g_inner = 0;  // the command: reaped by the main loop only
static struct rlimit g_core_limit;  // the command's (the guard's own soft limit is 0)

// State, parent and process group of `pid`, from /proc/<pid>/stat.
static bool read_stat(pid_t pid, pid_t* ppid, pid_t* pgrp, char* state) {
  char path[48];
  put_str(put_int(put_str(path, "/proc/"), pid), "/stat");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return false;
  buf[got] = 0;
  // "pid (comm) S ppid pgrp ...": comm may hold anything, so from the last ')'.
  char* p = NULL;
  for (char* c = buf; *c; ++c)
    if (*c == ')') p = c;
  if (!p || p[1] != ' ' || !p[2]) return false;
  *state = p[2];
  const char* q = p + 3;
  long fields[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    while (*q == ' ') ++q;
    if (!take_int(&q, &fields[i])) return false;
  }
  *ppid = (pid_t)fields[0];
  *pgrp = (pid_t)fields[1];
  return true;
}

static volatile sig_atomic_t g_stopping = 0;      // the group was sent a stop (SIGTERM/SIGINT)
static volatile sig_atomic_t g_orphan_ended = 0;  // a process below the command was reaped...
static volatile int g_orphan_status = 0;          // ...with this wait status (the last one)
// A sweep SIGKILLed a live process below the command: the rank's last
// processes ended by the sweep, whoever reaps them (the wrapper shell may: a
// shell in wait() that a fatal SIGTERM woke reaps the SIGKILLed rank first,
// and the guard never sees its status).
static volatile sig_atomic_t g_swept_live = 0;

static void note_orphan_end(int status) {
  g_orphan_status = status;
  g_orphan_ended = 1;
}

// Whether `pid` (our child) was reaped now.
static bool reap(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) != pid) return false;
  note_orphan_end(status);
  return true;
}

// --- Finding everything below the guard.
//
// Every process of the rank's group is a descendant of the guard (a process
// can only join a group of its own session, and one that leaves with setsid
// takes its own children along), and the guard is a subreaper: orphans
// anywhere below come back to it. So the walk from the guard down through
// /proc/<pid>/task/<tid>/children sees the whole rank, setsid escapees
// included, at a cost of the rank's size, not the machine's (a scan of all
// of /proc per sweep was a sixth of a 32-rank launch's CPU). Kernels without
// the children files (CONFIG_PROC_CHILDREN) get the scan.

enum { kMaxTree = 16384 };
static pid_t g_tree[kMaxTree];

// Appends the children of `pid` (of each of its threads) to g_tree[*n...].
static void add_children(pid_t pid, int* n) {
  char path[64];
  char* end = put_str(put_int(put_str(path, "/proc/"), pid), "/task");
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  char buf[2048];
  long got;
  while ((got = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < got;) {
      struct linux_dirent64* d = (struct linux_dirent64*)(buf + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      long tid = 0;
      if (!take_int(&name, &tid) || *name != 0) continue;
      put_str(put_int(put_str(end, "/"), tid), "/children");
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char list[4096];
      ssize_t len = read(fd, list, sizeof list - 1);
      close(fd);
      if (len <= 0) continue;
      list[len] = 0;
      for (const char* p = list; *p && *n < kMaxTree;) {
        long child = 0;
        if (take_int(&p, &child)) {
          g_tree[(*n)++] = (pid_t)child;
        } else {
          ++p;
        }
      }
    }
  }
  close(dir);
}

// Whether this kernel has the children files.
static bool have_children_files(void) {
  char path[64];
  put_str(put_int(put_str(put_int(put_str(path, "/proc/"), getpid()), "/task/"), getpid()),
          "/children");
  return access(path, R_OK) == 0;
}

// Every pid below the guard into g_tree; returns how many.
static int descendants(void) {
  int n = 0;
  add_children(getpid(), &n);
  for (int i = 0; i < n; ++i) add_children(g_tree[i], &n);
  return n;
}

// Without the children files: our children, and our group's members.
static int scan_all_of_proc(void) {
  pid_t self = getpid();
  pid_t group = getpgrp();
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int n = 0;
  char buf[4096];
  long got;
  while ((got = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < got && n < kMaxTree;) {
      struct linux_dirent64* d = (struct linux_dirent64*)(buf + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      long pid = 0;
      if (!take_int(&name, &pid) || *name != 0 || pid == self) continue;
      pid_t ppid = 0, pgrp = 0;
      char state = 0;
      if (!read_stat((pid_t)pid, &ppid, &pgrp, &state)) continue;
      if (ppid == self || pgrp == group) g_tree[n++] = (pid_t)pid;
    }
  }
  close(dir);
  return n;
}

static bool g_children_files = true;

// The command's end, once a walk saw it: from the next walk on, everything
// it had is the guard's (a parent's children move up before it shows 'Z').
static volatile sig_atomic_t g_inner_seen_dead = 0;

// Sends `sig` (0: none, only count) to everything below the guard (with
// `escapees_only`, to those outside its group alone: setsid escapees, which
// the group's signal never reached), and reaps those of its children that
// are dead (never the command: the main loop waits for it). Returns how many
// were still there, or would have been: a walk reads one children list after
// the other, and a parent that ends between the reads hands its children up
// to the guard, whose list was read already: they are in no list this walk
// read. Such a parent is dead or gone when the walk looks at it, so a walk
// that met a death (a zombie, a process that vanished, the command's end
// seen for the first time) counts it, and the next walk, which reads the
// guard's list first, decides. (A wrapper shell that a stop ended while the
// owner's sweep walked: the rank it handed up was missed, nothing killed it,
// and the guard waited out its 300 s handler.)
static int signal_descendants(int sig, bool escapees_only) {
  pid_t self = getpid();
  pid_t group = getpgrp();
  int n = g_children_files ? descendants() : scan_all_of_proc();
  int found = 0;
  for (int i = 0; i < n; ++i) {
    pid_t pid = g_tree[i];
    pid_t ppid = 0, pgrp = 0;
    char state = 0;
    if (!read_stat(pid, &ppid, &pgrp, &state)) {
      ++found;  // gone since the walk: reaped by its parent
      continue;
    }
    bool mine = ppid == self;
    if (state == 'Z') {
      // Dead already: reap it (others reap their own); either way a death
      // met by this walk. A multi-threaded process shows 'Z' while its other
      // threads still exit, and cannot be reaped yet: it still counts, or the
      // guard left it behind as a zombie of whoever adopted it next.
      if (pid != g_inner) {
        if (mine) reap(pid);
        ++found;
      } else if (!g_inner_seen_dead) {
        g_inner_seen_dead = 1;
        ++found;
      }
      continue;
    }
    ++found;
    if (sig != 0 && (!escapees_only || pgrp != group) && kill(pid, sig) == 0 && sig == SIGKILL &&
        pid != g_inner)
      g_swept_live = 1;
    if (mine && pid != g_inner) reap(pid);
  }
  return found;
}

// Until nothing below us is left (bounded: 10 s).
static void sweep(void) {
  for (int round = 0; round < 400 && signal_descendants(SIGKILL, false) > 0; ++round) pause_ms(25);
}

// The walks share g_tree with the sweeps of the owner's signals (kill_tree,
// parent death), which may interrupt the main loop anywhere: its walks hold
// those signals off while they run.
static void hold_owner_signals(bool hold) {
  sigset_t owner;
  sigemptyset(&owner);
  sigaddset(&owner, ATL_KILL_TREE_SIGNAL);
  sigaddset(&owner, ATL_PARENT_DIED_SIGNAL);
  sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &owner, NULL);
}

static int walk_from_main(int sig, bool escapees_only) {
  hold_owner_signals(true);
  int found = signal_descendants(sig, escapees_only);
  hold_owner_signals(false);
  return found;
}

static void sweep_from_main(void) {
  hold_owner_signals(true);
  sweep();
  hold_owner_signals(false);
}

// The owner died (pdeathsig): nothing of this rank may outlive it.
static void on_parent_death(int sig) {
  (void)sig;
  sweep();
  _exit(128 + SIGKILL);
}

// The owner's kill_tree(): end the command and everything it started now.
// It is a stop too, and it may be handled before the stop's SIGTERM when both
// are pending (signals are taken lowest first: SIGUSR2 12, SIGTERM 15): the
// stop's start is marked here, so that on_stop does not forget the rank's
// end the sweep just reaped (a SIGKILLed handler was reported as SIGTERM).
static void on_kill_tree(int sig) {
  (void)sig;
  if (!g_stopping) g_orphan_ended = 0;
  g_stopping = 1;
  sweep();
}

// A stop reached the group: the command's end is no longer the rank's end.
// Only what ends after the stop speaks for the rank.
static void on_stop(int sig) {
  (void)sig;
  if (!g_stopping) g_orphan_ended = 0;
  g_stopping = 1;
}

// Reaps every child that has ended: orphans adopted by this subreaper would
// stay zombies for as long as the command runs. True, with its status, once
// the command ended.
static bool reap_ended(pid_t inner, int* status, bool block) {
  while (true) {
    int st = 0;
    pid_t p = waitpid(-1, &st, block ? 0 : WNOHANG);
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

// The node's lease: its stamp (mapped from the memfd), NULL when none.
static const _Atomic int64_t* g_lease = NULL;
static long g_lease_timeout_ms = 0;

static bool lease_expired(void) {
  return g_lease &&
         atl_lease_expired(atomic_load_explicit(g_lease, memory_order_relaxed), g_lease_timeout_ms);
}

// Waits for the command, and with a lease, kills its tree once the lease runs
// out. Returns the command's wait status.
static int wait_for_command(pid_t inner) {
  int status = 0;
  if (g_lease) {
    int pidfd = (int)syscall(SYS_pidfd_open, inner, 0);
    while (true) {
      if (reap_ended(inner, &status, false)) {
        if (pidfd >= 0) close(pidfd);
        return status;
      }
      if (pidfd >= 0) {
        struct pollfd p = {pidfd, POLLIN, 0};
        poll(&p, 1, 100);  // the command ended, or 100 ms: look again
      } else {
        pause_ms(20);  // no pidfd (an old kernel)
      }
      if (lease_expired()) {
        // The node froze or lost its head: nothing of this rank may go on.
        sweep_from_main();
        break;
      }
    }
    if (pidfd >= 0) close(pidfd);
  }
  while (!reap_ended(inner, &status, true)) {
  }
  return status;
}

// After a stop, the command (often a shell wrapper that SIGTERM ends at once)
// may end before what it started: a Python rank still saving its checkpoint
// in its SIGTERM handler. The rank's grace belongs to the whole tree, so the
// guard waits for everything below it to end by itself; the owner's grace
// timer (kill_tree) or an expired lease ends the wait. Escapees that left the
// group (setsid) were never signalled: they get the stop, and only they.
// Those in the group had it: a second SIGTERM (0.1-0.6 ms after the first)
// hit a torchelastic-style handler (raise on SIGTERM, checkpoint in
// `except`) inside its checkpoint.
static void wait_for_the_rest(void) {
  walk_from_main(SIGTERM, true);
  walk_from_main(SIGCONT, false);  // a stopped one takes its SIGTERM now, not after the grace
  while (walk_from_main(0, false) > 0) {
    if (lease_expired()) return;  // the sweep that follows ends them
    pause_ms(20);
  }
}

static _Noreturn void exec_command(char** argv, char** envp) {
  execve(argv[0], argv, envp);
  if (errno == ENOENT && !strchr(argv[0], '/')) {
    // execve does no PATH search: do it with the command's own PATH.
    const char* path = NULL;
    for (char** e = envp; *e; ++e)
      if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    char full[4096];
    while (*path) {
      const char* colon = strchr(path, ':');
      size_t len = colon ? (size_t)(colon - path) : strlen(path);
      if (len + strlen(argv[0]) + 2 < sizeof full) {
        memcpy(full, path, len);
        full[len] = '/';
        strcpy(full + len + 1, argv[0]);
        execve(full, argv, envp);
      }
      if (!colon) break;
      path = colon + 1;
    }
  }
  fail(ATL_STEP_EXEC, errno);
}

// pdeathsig only reaches a direct child, so the guard turns "my owner died"
// into SIGKILL for everything below it.
static void become_guard(pid_t parent) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  set_disposition(ATL_PARENT_DIED_SIGNAL, on_parent_death);
  set_disposition(ATL_KILL_TREE_SIGNAL, on_kill_tree);
  prctl(PR_SET_PDEATHSIG, ATL_PARENT_DIED_SIGNAL);
  // The owner died before prctl took (or this is not its child): nothing is
  // started yet, so nothing is left behind.
  if (getppid() != parent) _exit(128 + SIGKILL);
  // A stop (SIGTERM/SIGINT to the group) is for the command; the guard stays
  // to report how it ended, and notes it: from then on it waits for the tree.
  set_disposition(SIGTERM, on_stop);
  set_disposition(SIGINT, on_stop);
  // The spawner ignores SIGPIPE; the command gets the default back.
  set_disposition(SIGPIPE, SIG_DFL);
  // The guard never dumps core: a crashed rank's core file is the user's evidence.
  getrlimit(RLIMIT_CORE, &g_core_limit);
  struct rlimit no_core = {0, g_core_limit.rlim_max};
  setrlimit(RLIMIT_CORE, &no_core);
}

// The command's words out of the guard's title (/proc/PID/cmdline: ps -ef,
// pgrep -f): the guide's cleanup (`ps -ef | grep python | ... | xargs kill
// -9`, `pkill -f python`) kills the rank, never its guard, which then ends
// as the rank did. The child has its own copy since its exec; the title
// reads "atl-guard OWNER LEASE_MS --". The strings are contiguous, as the
// kernel laid them out.
static void forget_command(int argc, char** argv) {
  if (argc <= 4) return;
  char* from = argv[4];
  char* to = argv[argc - 1] + strlen(argv[argc - 1]);
  if (to > from) memset(from, 0, (size_t)(to - from));
}

// `atl-guard --pod-init`: PID 1 of a pod's namespace that commands join
// (PodNamespace, child_process.hpp). It reaps what is orphaned inside and
// does nothing else; signals from inside cannot reach it (a namespace's
// first process gets only those it handles), and its end (SIGKILL from its
// owner, or its owner's death) ends everything inside.
_Noreturn static void pod_init(void) {
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child, NULL);
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    siginfo_t info;
    sigwaitinfo(&child, &info);
  }
}

// `atl-guard --tcp-ready HOST PORT`: 0 when HOST:PORT takes a TCP
// connection within a second, 1 otherwise. A Ray worker pod waits so for its
// head's GCS (ray_cluster.cpp) before it asks the GCS itself: a static
// program's start, not a Python's with Ray imported (~0.5 s of CPU on the
// same two cores the head starts on).
static int tcp_ready(const char* host, const char* port) {
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* found = NULL;
  if (getaddrinfo(host, port, &hints, &found) != 0) return 1;
  int code = 1;
  for (struct addrinfo* a = found; a && code != 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      code = 0;
    } else if (errno == EINPROGRESS) {
      struct pollfd p = {fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (poll(&p, 1, 1000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
          err == 0)
        code = 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return code;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--pod-init") == 0) pod_init();
  if (argc == 4 && strcmp(argv[1], "--tcp-ready") == 0) return tcp_ready(argv[2], argv[3]);
  fcntl(ATL_GUARD_REPORT_FD, F_SETFD, FD_CLOEXEC);
  const char* p1 = argc > 4 ? argv[1] : "";
  const char* p2 = argc > 4 ? argv[2] : "";
  long parent = 0, lease_ms = 0;
  if (argc < 5 || !take_int(&p1, &parent) || *p1 || !take_int(&p2, &lease_ms) || *p2 ||
      strcmp(argv[3], "--") != 0)
    fail(ATL_STEP_ARGS, EINVAL);
  if (lease_ms > 0) {
    void* page = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, ATL_GUARD_LEASE_FD, 0);
    if (page == MAP_FAILED) fail(ATL_STEP_GUARD, errno);
    close(ATL_GUARD_LEASE_FD);
    g_lease = (const _Atomic int64_t*)page;
    g_lease_timeout_ms = lease_ms;
  }
  g_children_files = have_children_files();
  become_guard((pid_t)parent);
  // The spawner blocked every signal around the vfork; handlers are in place now.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  char** command = argv + 4;
  // vfork: the guard is single-threaded, and the child only resets its own
  // signal dispositions and execs (or _exits).
  pid_t inner = vfork();
  if (inner < 0) fail(ATL_STEP_FORK, errno);
  if (inner == 0) {
    set_disposition(SIGTERM, SIG_DFL);
    set_disposition(SIGINT, SIG_DFL);
    set_disposition(ATL_PARENT_DIED_SIGNAL, SIG_DFL);
    set_disposition(ATL_KILL_TREE_SIGNAL, SIG_DFL);
    // The guard killed from outside (kill -9): the command goes with it
    // instead of running on unwatched.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The command dumps core as the node would have let it.
    setrlimit(RLIMIT_CORE, &g_core_limit);
    exec_command(command, environ);
  }
  g_inner = inner;
  forget_command(argc, argv);
  close(ATL_GUARD_REPORT_FD);  // the exec's CLOEXEC copy in `inner` tells the spawner
  int status = wait_for_command(inner);
  g_inner = 0;  // reaped: its pid may be anyone's now
  const bool stopped = g_stopping;
  if (stopped) wait_for_the_rest();
  // The rank ended: whatever it left behind, in its group or not, goes too.
  sweep_from_main();
  // A wrapper the stop signal ended speaks for nothing: the rank ended as
  // the last process of its tree did: by a sweep's SIGKILL (the owner's
  // kill_tree when the grace ran out, an expired lease), else by the
  // handler's own exit.
  bool wrapper_stopped =
      WIFSIGNALED(status) && (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT);
  if (stopped && wrapper_stopped) {
    if (g_swept_live) {
      status = SIGKILL;  // the wait status of a process SIGKILL ended
    } else if (g_orphan_ended) {
      status = g_orphan_status;
    }
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    set_disposition(sig, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, 0);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 255);
}
