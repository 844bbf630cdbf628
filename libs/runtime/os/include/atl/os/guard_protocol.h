/* What ChildProcess::spawn and the `atl-guard` program agree on: how the
 * guard is started and how it is told things. C and C++ alike, libc only:
 * the guard is a small static C program that links nothing of atl's.
 *
 *   atl-guard <owner pid> <lease timeout ms, 0: none> -- <command> [args...]
 *
 * Descriptors at its start: 0 /dev/null, 1 and 2 the command's output, 3 the
 * command's control channel (when it has one), ATL_GUARD_REPORT_FD the report
 * pipe (two ints, step and errno, when the start failed; closed by the
 * command's exec), ATL_GUARD_LEASE_FD the node's lease (a memfd holding one
 * int64 nanosecond stamp of CLOCK_MONOTONIC, when it has one). Its
 * environment is the command's. */
#ifndef ATL_OS_GUARD_PROTOCOL_H
#define ATL_OS_GUARD_PROTOCOL_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

#define ATL_GUARD_BINARY "atl-guard"

enum { ATL_GUARD_REPORT_FD = 4, ATL_GUARD_LEASE_FD = 5 };

/* Steps a failed start reports (the first int on the report pipe). */
enum {
  ATL_STEP_OUTPUT = 1,       /* redirect output */
  ATL_STEP_CHDIR = 2,        /* change to the working directory */
  ATL_STEP_EXEC = 3,         /* exec the command */
  ATL_STEP_FORK = 4,         /* start the command's process */
  ATL_STEP_GUARD = 5,        /* start the guard itself */
  ATL_STEP_ARGS = 6,         /* the guard's arguments */
  ATL_STEP_PID_NAMESPACE = 7 /* an unguarded child's own /proc (SpawnRequest::own_pid_namespace) */
};

/* The owner's "kill everything below you now" (the guard's sweep). */
#define ATL_KILL_TREE_SIGNAL SIGUSR2
/* The guard's pdeathsig: its owner died, nothing of the rank may outlive it. */
#define ATL_PARENT_DIED_SIGNAL SIGUSR1

static inline int64_t atl_monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Whether a lease last stamped at `stamp` (ns) has run out after `timeout_ms`. */
static inline int atl_lease_expired(int64_t stamp, int64_t timeout_ms) {
  return atl_monotonic_ns() - stamp > timeout_ms * 1000000;
}

#endif
