/* Tasks through the C API, run as the driver of a driver-mode job with two
 * workers offering one "slot" each: commands in bundles and on pods, their
 * output streamed back line by line, exit codes, kill, a task dying with its
 * group, a detached task started again by the supervisor, and bad input
 * refused. Exits 0 when every check passed. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atl.h"
#include "check.h"

/* All of a task's output so far, appended to buf (NUL-terminated). */
static int64_t read_more(atl_client* c, int32_t task, int64_t offset, char* buf, size_t size) {
  char* data = NULL;
  int64_t n = 0, next = offset;
  char msg[512];
  CHECK(take(atl_task_output(c, task, offset, &data, &n, &next), msg, sizeof msg) == ATL_OK,
        "output: %s", msg);
  if (data && n > 0) strncat(buf, data, size - strlen(buf) - 1);
  atl_free(data);
  return next;
}

static int32_t start(atl_client* c, int64_t group, int32_t bundle, const char* pod,
                     const char* command, const char* const* env, const char* dir) {
  int32_t task = -1;
  char msg[1024];
  atl_code code =
      take(atl_task_start(c, group, bundle, pod, command, env, dir, &task), msg, sizeof msg);
  CHECK(code == ATL_OK, "start %s: %s", command, msg);
  return task;
}

/* A thread that calls and then outlives its call (a driver's idle pool). */
static pthread_mutex_t idle_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int idle_release = 0;

static void* call_then_idle(void* arg) {
  char* json = NULL;
  atl_status_free(atl_job_info(arg, &json));
  atl_free(json);
  pthread_mutex_lock(&idle_mutex);
  while (!idle_release) pthread_cond_wait(&idle_cond, &idle_mutex);
  pthread_mutex_unlock(&idle_mutex);
  return NULL;
}

/* A task waited for on another thread, with the answer it got. */
struct parked_wait {
  atl_client* client;
  int32_t task;
  atl_code code;
  char msg[512];
};

static void* wait_long(void* arg) {
  struct parked_wait* p = arg;
  int32_t code = 0, sig = 0;
  p->code = take(atl_task_wait(p->client, p->task, 60000, &code, &sig), p->msg, sizeof p->msg);
  return NULL;
}

int main(void) {
  char msg[2048];
  char out[8192];
  int32_t code = -1, sig = -1;
  atl_client* c = NULL;
  if (take(atl_connect(NULL, NULL, 0, &c), msg, sizeof msg) != ATL_OK) {
    fprintf(stderr, "FAIL: connect: %s\n", msg);
    return 1;
  }
  const char* job = getenv("ATL_JOB_ID");
  char worker1[256];
  snprintf(worker1, sizeof worker1, "%s-worker-1", job ? job : "?");

  /* A task in each bundle of a STRICT_SPREAD group: each runs on its node. */
  int64_t group = -1;
  CHECK(take(atl_pg_create(c, NULL, "STRICT_SPREAD", "[{\"slot\": 1}, {\"slot\": 1}]", 0, &group),
             msg, sizeof msg) == ATL_OK,
        "group: %s", msg);
  CHECK(take(atl_pg_wait(c, group, 5000, NULL), msg, sizeof msg) == ATL_OK, "placed: %s", msg);
  int32_t t0 =
      start(c, group, 0, NULL, "echo on $ATL_POD_NAME as task $ATL_TASK_ID; exit 3", NULL, NULL);
  int32_t t1 = start(c, group, 1, NULL, "echo on $ATL_POD_NAME; echo to stderr >&2", NULL, NULL);
  CHECK(take(atl_task_wait(c, t0, 10000, &code, &sig), msg, sizeof msg) == ATL_OK, "wait: %s", msg);
  CHECK(code == 3 && sig == 0, "exit code %d signal %d", code, sig);
  CHECK(take(atl_task_wait(c, t1, 10000, &code, &sig), msg, sizeof msg) == ATL_OK, "wait: %s", msg);
  CHECK(code == 0, "exit code %d", code);
  out[0] = 0;
  read_more(c, t0, 0, out, sizeof out);
  char want[512];
  snprintf(want, sizeof want, "-worker-0 as task %d\n", t0);
  CHECK(strstr(out, want) != NULL, "task 0 output: %s", out);
  out[0] = 0;
  read_more(c, t1, 0, out, sizeof out);
  CHECK(strstr(out, worker1) && strstr(out, "to stderr\n"), "task 1 output: %s", out);

  /* On a named pod, with its own env and directory. */
  const char* env[] = {"FOO=bar baz", "MASTER_PORT=1234", NULL};
  int32_t t2 = start(c, 0, -1, worker1, "echo $FOO $MASTER_PORT $(pwd)", env, "/tmp");
  CHECK(take(atl_task_wait(c, t2, 10000, &code, &sig), msg, sizeof msg) == ATL_OK, "wait: %s", msg);
  out[0] = 0;
  read_more(c, t2, 0, out, sizeof out);
  CHECK(strcmp(out, "bar baz 1234 /tmp\n") == 0, "env and dir: '%s'", out);

  /* Output streams back while the task runs, line by line. */
  int32_t t3 =
      start(c, 0, -1, NULL, "for i in 1 2 3; do echo line $i; sleep 0.3; done", NULL, NULL);
  int64_t offset = 0;
  int seen_while_running = 0;
  out[0] = 0;
  for (int i = 0; i < 100 && !strstr(out, "line 3"); ++i) {
    offset = read_more(c, t3, offset, out, sizeof out);
    if (strstr(out, "line 1") && take(atl_task_wait(c, t3, 0, NULL, NULL), NULL, 0) == ATL_TIMEOUT)
      seen_while_running = 1;
    usleep(100 * 1000);
  }
  CHECK(seen_while_running, "a line arrived while the task ran: '%s'", out);
  CHECK(strcmp(out, "line 1\nline 2\nline 3\n") == 0, "every line once, in order: '%s'", out);
  CHECK(take(atl_task_wait(c, t3, 10000, &code, &sig), msg, sizeof msg) == ATL_OK, "wait: %s", msg);

  /* Kill ends it; a task dies with its group. */
  int32_t t4 = start(c, 0, -1, NULL, "exec sleep 600", NULL, NULL);
  CHECK(take(atl_task_wait(c, t4, 100, NULL, NULL), msg, sizeof msg) == ATL_TIMEOUT, "runs: %s",
        msg);
  CHECK(take(atl_task_kill(c, t4), msg, sizeof msg) == ATL_OK, "kill: %s", msg);
  CHECK(take(atl_task_wait(c, t4, 20000, &code, &sig), msg, sizeof msg) == ATL_OK, "wait: %s", msg);
  CHECK(sig == SIGTERM, "killed by SIGTERM: code %d signal %d", code, sig);
  CHECK(take(atl_task_kill(c, t4), msg, sizeof msg) == ATL_REFUSED, "kill twice: %s", msg);
  int32_t t5 = start(c, group, 1, NULL, "exec sleep 600", NULL, NULL);
  CHECK(take(atl_pg_remove(c, group), msg, sizeof msg) == ATL_OK, "remove: %s", msg);
  CHECK(take(atl_task_wait(c, t5, 20000, &code, &sig), msg, sizeof msg) == ATL_OK, "wait: %s", msg);
  CHECK(sig == SIGTERM, "died with its group: code %d signal %d", code, sig);

  /* A result handed back on the control channel; none from a task that sends none. */
  int32_t t6 = start(c, 0, -1, NULL, "echo 'result 42 and more' >&$ATL_CONTROL_FD", NULL, NULL);
  char* result = NULL;
  CHECK(take(atl_task_result(c, t6, 10000, &result), msg, sizeof msg) == ATL_OK, "result: %s", msg);
  CHECK(result && strcmp(result, "42 and more") == 0, "result: '%s'", result ? result : "(null)");
  atl_free(result);
  result = NULL;
  CHECK(take(atl_task_result(c, t2, 0, &result), msg, sizeof msg) == ATL_OK && result == NULL,
        "no result: %s", msg);

  /* Bad input: refused, nothing started. */
  int32_t none = -1;
  CHECK(take(atl_task_start(c, 0, -1, NULL, NULL, NULL, NULL, &none), msg, sizeof msg) == ATL_USAGE,
        "NULL command");
  CHECK(take(atl_task_start(c, 0, -1, NULL, "  ", NULL, NULL, &none), msg, sizeof msg) == ATL_USAGE,
        "blank command: %s", msg);
  CHECK(take(atl_task_start(c, 999, 0, NULL, "true", NULL, NULL, &none), msg, sizeof msg) ==
            ATL_USAGE,
        "unknown group: %s", msg);
  CHECK(take(atl_task_start(c, group, 0, NULL, "true", NULL, NULL, &none), msg, sizeof msg) ==
            ATL_REFUSED,
        "removed group: %s", msg);
  CHECK(take(atl_task_start(c, 0, -1, "nope-worker-9", "true", NULL, NULL, &none), msg,
             sizeof msg) == ATL_USAGE,
        "unknown pod: %s", msg);
  const char* bad_env[] = {"NOEQUALS", NULL};
  CHECK(take(atl_task_start(c, 0, -1, NULL, "true", bad_env, NULL, &none), msg, sizeof msg) ==
            ATL_USAGE,
        "bad env: %s", msg);
  CHECK(strstr(msg, "'NOEQUALS' is not KEY=VALUE"), "%s", msg);
  CHECK(take(atl_task_wait(c, 4242, 0, NULL, NULL), msg, sizeof msg) == ATL_USAGE, "unknown task");
  CHECK(none == -1, "no task id on failure");

  /* A detached task with a restart: its first run exits 1, the supervisor
   * starts it again (ATL_TASK_RESTARTS=1 in its env, the next task id); a
   * kill of its first id ends the one running now, and nothing more starts. */
  int32_t chain = -1;
  const char* again =
      "echo run-${ATL_TASK_RESTARTS:-0}; [ -n \"$ATL_TASK_RESTARTS\" ] && exec sleep 600; exit 1";
  CHECK(take(atl_task_start_detached(c, 0, -1, NULL, again, NULL, NULL, 1, 0, &chain), msg,
             sizeof msg) == ATL_OK,
        "start detached: %s", msg);
  CHECK(take(atl_task_wait(c, chain, 10000, &code, &sig), msg, sizeof msg) == ATL_OK && code == 1,
        "its first run: %s (code %d)", msg, code);
  char rerun[256] = "";
  int64_t at = 0;
  for (int i = 0; i < 200 && !strstr(rerun, "run-1\n"); ++i) {
    usleep(50 * 1000);
    char* data = NULL;
    int64_t n = 0, next = at;
    atl_status* s = atl_task_output(c, chain + 1, at, &data, &n, &next);
    if (s == NULL) { /* (not started yet: no such task, asked again) */
      if (data && n > 0) strncat(rerun, data, sizeof rerun - strlen(rerun) - 1);
      at = next;
    } else {
      atl_status_free(s);
    }
    atl_free(data);
  }
  CHECK(strstr(rerun, "run-1\n") != NULL, "started again as task %d: '%s'", chain + 1, rerun);
  CHECK(take(atl_task_kill(c, chain), msg, sizeof msg) == ATL_OK, "kill by its first id: %s", msg);
  CHECK(take(atl_task_wait(c, chain + 1, 20000, &code, &sig), msg, sizeof msg) == ATL_OK &&
            sig == SIGTERM,
        "the one running ended by the kill: %s (signal %d)", msg, sig);
  CHECK(take(atl_task_start_detached(c, 0, -1, NULL, "true", NULL, NULL, -2, 0, &none), msg,
             sizeof msg) == ATL_USAGE,
        "restarts -2: %s", msg);
  CHECK(take(atl_task_start_detached(c, 0, -1, NULL, "true", NULL, NULL, 1, 1, &none), msg,
             sizeof msg) == ATL_USAGE &&
            strstr(msg, "own_group"),
        "own_group without a group: %s", msg);

  /* atl_interrupt: a wait in flight on another thread fails at once, and so
   * does every later call, while the client stays valid until disconnected
   * (what a binding does before it frees a client its threads may still be
   * entering). */
  atl_client* other = NULL;
  CHECK(take(atl_connect(NULL, NULL, 0, &other), msg, sizeof msg) == ATL_OK, "connect: %s", msg);
  if (other) {
    int32_t sleeper = start(other, 0, -1, NULL, "exec sleep 600", NULL, NULL);
    struct parked_wait parked = {other, sleeper, ATL_OK, ""};
    pthread_t waiter;
    pthread_create(&waiter, NULL, wait_long, &parked);
    usleep(300 * 1000);
    double t0 = now();
    atl_interrupt(other);
    pthread_join(waiter, NULL);
    CHECK(parked.code == ATL_UNREACHABLE && strstr(parked.msg, "disconnected"),
          "the wait in flight at the interrupt: %d %s", parked.code, parked.msg);
    CHECK(now() - t0 < 15.0, "the interrupted wait returned after %.1f s", now() - t0);
    char* json = NULL;
    CHECK(take(atl_job_info(other, &json), msg, sizeof msg) == ATL_UNREACHABLE &&
              strstr(msg, "atl_job_info: the client disconnected"),
          "a call after the interrupt: %s", msg);
    CHECK(json == NULL, "no answer after the interrupt");
    atl_interrupt(other); /* twice is fine */
    atl_disconnect(other);
    /* What a client made ends with its connection (atl.h, atl_disown): the
     * supervisor stops its sleeper, which nobody else may need to kill. */
    CHECK(take(atl_task_wait(c, sleeper, 20000, &code, &sig), msg, sizeof msg) == ATL_OK,
          "the disconnected client's task was not stopped: %s", msg);
    CHECK(sig == 15 || sig == 9, "the disconnected client's task ended with %d/%d", code, sig);
  }
  atl_interrupt(NULL);

  /* Disconnecting while a thread that called is still alive returns at once
   * (CAF 0.17 would wait for that thread, had it spawned an actor there). */
  pthread_t idle;
  pthread_create(&idle, NULL, call_then_idle, c);
  usleep(300 * 1000);
  atl_disconnect(c);
  pthread_mutex_lock(&idle_mutex);
  idle_release = 1;
  pthread_cond_signal(&idle_cond);
  pthread_mutex_unlock(&idle_mutex);
  pthread_join(idle, NULL);
  printf("tasks: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
