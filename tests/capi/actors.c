/* Named actors through the C API. Run as the driver of a driver-mode job:
 *   actors_test driver     hosts one actor itself, starts another in a task on
 *                          a worker (this program with "host NAME"), calls both
 *                          by name: replies, handler errors, timeouts, a
 *                          thousand calls in flight, a host that dies.
 *   actors_test host NAME  hosts NAME until killed ("NAME:" + request; "fail"
 *                          answers an error, "slow" takes 3 s).
 * Exits 0 when every check passed. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atl.h"
#include "check.h"

static void* freeze_soon(void* unused) {
  (void)unused;
  usleep(300 * 1000);
  kill(getpid(), SIGSTOP);
  return NULL;
}

static void handler(void* user, const char* request, int64_t size, atl_reply* reply) {
  const char* name = user;
  if (size == 4 && memcmp(request, "fail", 4) == 0) {
    atl_reply_error(reply, "fail was asked for");
    return;
  }
  if (size == 4 && memcmp(request, "slow", 4) == 0) sleep(3);
  if (size == 6 && memcmp(request, "freeze", 6) == 0) {
    /* Stops itself (SIGSTOP) once this reply is on its way: a caller in
     * another pod cannot signal it (pods are PID namespaces of their own). */
    pthread_t later;
    if (pthread_create(&later, NULL, freeze_soon, NULL) == 0) pthread_detach(later);
    atl_reply_set(reply, "freezing", 8);
    return;
  }
  char out[4096];
  int n = snprintf(out, sizeof out, "%s:%.*s", name, (int)size, request);
  atl_reply_set(reply, out, n);
}

static atl_client* connect_or_die(void) {
  atl_client* c = NULL;
  char msg[1024];
  if (take(atl_connect(NULL, NULL, 0, &c), msg, sizeof msg) != ATL_OK) {
    fprintf(stderr, "FAIL: connect: %s\n", msg);
    exit(1);
  }
  return c;
}

static int host(const char* name) {
  atl_client* c = connect_or_die();
  atl_actor* a = NULL;
  char msg[1024];
  if (take(atl_actor_host(c, name, handler, (void*)name, &a), msg, sizeof msg) != ATL_OK) {
    fprintf(stderr, "FAIL: host %s: %s\n", name, msg);
    return 1;
  }
  printf("hosting %s\n", name);
  fflush(stdout);
  for (;;) pause(); /* until killed: the actor dies with its process */
}

/* Calls `name` with `request`; the reply (or NULL) in *reply. */
static atl_code call(atl_client* c, const char* name, const char* request, int64_t timeout_ms,
                     char** reply, char* msg, size_t size) {
  int64_t n = 0;
  *reply = NULL;
  return take(atl_actor_call(c, name, request, (int64_t)strlen(request), timeout_ms, reply, &n),
              msg, size);
}

struct caller {
  atl_client* client;
  int index;
  int ok;
};

static void* call_once(void* arg) {
  struct caller* k = arg;
  char request[32], want[64], msg[512];
  char* reply = NULL;
  snprintf(request, sizeof request, "n%d", k->index);
  snprintf(want, sizeof want, "remote-echo:n%d", k->index);
  k->ok = call(k->client, "remote-echo", request, 60000, &reply, msg, sizeof msg) == ATL_OK &&
          reply && strcmp(reply, want) == 0;
  if (!k->ok) fprintf(stderr, "call %d: %s\n", k->index, msg);
  atl_free(reply);
  return NULL;
}

struct slow_call {
  atl_client* client;
  atl_code code;
  char msg[1024];
};

static void* call_slow(void* arg) {
  struct slow_call* s = arg;
  char* reply = NULL;
  s->code = call(s->client, "remote-echo", "slow", 60000, &reply, s->msg, sizeof s->msg);
  atl_free(reply);
  return NULL;
}

/* "park": the handler holds its call until the caller's thread has returned
 * (or 20 s), so the disconnect below finds that call in flight. */
static volatile int parked = 0, released = 0;

static void parking_handler(void* user, const char* request, int64_t size, atl_reply* reply) {
  (void)user, (void)request, (void)size;
  parked = 1;
  for (int i = 0; i < 2000 && !released; ++i) usleep(10 * 1000);
  atl_reply_set(reply, "late", 4);
}

static void* call_parked(void* arg) {
  struct slow_call* s = arg;
  char* reply = NULL;
  s->code = call(s->client, "parking", "park", 60000, &reply, s->msg, sizeof s->msg);
  atl_free(reply);
  released = 1;
  return NULL;
}

static int driver(void) {
  char msg[2048];
  char* reply = NULL;
  char* json = NULL;
  atl_client* c = connect_or_die();

  /* An actor hosted by the driver itself, called by name. */
  atl_actor* local = NULL;
  CHECK(take(atl_actor_host(c, "local-echo", handler, "local-echo", &local), msg, sizeof msg) ==
            ATL_OK,
        "host: %s", msg);
  CHECK(call(c, "local-echo", "hi", 5000, &reply, msg, sizeof msg) == ATL_OK && reply &&
            strcmp(reply, "local-echo:hi") == 0,
        "local call: %s %s", msg, reply ? reply : "(null)");
  atl_free(reply);
  atl_actor* twice = NULL;
  CHECK(take(atl_actor_host(c, "local-echo", handler, "x", &twice), msg, sizeof msg) == ATL_REFUSED,
        "a taken name: %s", msg);
  CHECK(twice == NULL, "no actor on failure");
  CHECK(take(atl_actor_host(c, "has space", handler, "x", &twice), msg, sizeof msg) == ATL_USAGE,
        "bad name: %s", msg);
  CHECK(call(c, "nobody", "hi", 1000, &reply, msg, sizeof msg) == ATL_USAGE, "unknown: %s", msg);
  CHECK(call(c, "local-echo", "fail", 5000, &reply, msg, sizeof msg) == ATL_FAILED &&
            strstr(msg, "fail was asked for"),
        "handler error: %s", msg);

  /* An actor hosted by a task on a worker: Ray's remote actor. */
  char self_path[4096];
  ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  self_path[len > 0 ? len : 0] = 0;
  char command[4200];
  snprintf(command, sizeof command, "exec %s host remote-echo", self_path);
  int32_t task = -1;
  CHECK(take(atl_task_start(c, 0, -1, NULL, command, NULL, NULL, &task), msg, sizeof msg) == ATL_OK,
        "task: %s", msg);
  int listed = 0;
  for (int i = 0; i < 300 && !listed; ++i) {
    CHECK(take(atl_actor_list(c, &json), msg, sizeof msg) == ATL_OK, "list: %s", msg);
    listed = json && strstr(json, "\"name\":\"remote-echo\"") != NULL;
    atl_free(json);
    if (!listed) usleep(50 * 1000);
  }
  CHECK(listed, "the task's actor was never registered");
  CHECK(call(c, "remote-echo", "hi", 5000, &reply, msg, sizeof msg) == ATL_OK && reply &&
            strcmp(reply, "remote-echo:hi") == 0,
        "remote call: %s %s", msg, reply ? reply : "(null)");
  atl_free(reply);

  /* A thousand calls in flight at once, each answered with its own reply. */
  enum { kCalls = 1000 };
  static struct caller callers[kCalls];
  static pthread_t threads[kCalls];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  int started = 0;
  for (int i = 0; i < kCalls; ++i) {
    callers[i] = (struct caller){c, i, 0};
    if (pthread_create(&threads[i], &attr, call_once, &callers[i]) == 0) ++started;
  }
  int ok = 0;
  for (int i = 0; i < started; ++i) {
    pthread_join(threads[i], NULL);
    ok += callers[i].ok;
  }
  CHECK(started == kCalls && ok == kCalls, "%d of %d calls answered right (%d started)", ok, kCalls,
        started);

  /* A timeout is a timeout (the actor is busy for 3 s). */
  CHECK(call(c, "remote-echo", "slow", 300, &reply, msg, sizeof msg) == ATL_TIMEOUT, "timeout: %s",
        msg);

  /* The host dies while a call waits: the caller hears of it, not after its timeout. */
  struct slow_call pending = {c, ATL_OK, ""};
  pthread_t waiter;
  pthread_create(&waiter, NULL, call_slow, &pending);
  usleep(300 * 1000);
  double t0 = now();
  CHECK(take(atl_task_kill(c, task), msg, sizeof msg) == ATL_OK, "kill: %s", msg);
  pthread_join(waiter, NULL);
  double waited = now() - t0;
  CHECK(pending.code == ATL_FAILED && strstr(pending.msg, "is gone"), "host death: %d %s",
        pending.code, pending.msg);
  CHECK(waited < 10.0, "the caller heard of the death after %.1f s", waited);
  CHECK(call(c, "remote-echo", "hi", 1000, &reply, msg, sizeof msg) == ATL_USAGE,
        "gone from the registry: %s", msg);

  /* A frozen host (SIGSTOP: its connection stays up): its callers hear of it
   * within the heartbeat timeout (3 s by default), not after their own. */
  snprintf(command, sizeof command, "exec %s host frozen-echo", self_path);
  int32_t frozen_task = -1;
  CHECK(take(atl_task_start(c, 0, -1, NULL, command, NULL, NULL, &frozen_task), msg, sizeof msg) ==
            ATL_OK,
        "task: %s", msg);
  char* frozen = NULL;
  for (int i = 0; i < 300; ++i) {
    if (call(c, "frozen-echo", "freeze", 5000, &frozen, msg, sizeof msg) == ATL_OK) break;
    usleep(50 * 1000);
  }
  CHECK(frozen && strcmp(frozen, "freezing") == 0, "the host did not freeze: %s", msg);
  atl_free(frozen);
  usleep(600 * 1000); /* its SIGSTOP has taken */
  t0 = now();
  CHECK(call(c, "frozen-echo", "hi", 60000, &reply, msg, sizeof msg) == ATL_FAILED &&
            strstr(msg, "no answer to a heartbeat"),
        "frozen host: %s", msg);
  waited = now() - t0;
  CHECK(waited < 10.0, "the caller heard of the frozen host after %.1f s", waited);
  /* Its task's end takes it (a stopped process dies to the sweep's SIGKILL). */
  CHECK(take(atl_task_kill(c, frozen_task), msg, sizeof msg) == ATL_OK, "kill frozen: %s", msg);

  /* Closing unregisters. */
  atl_actor_close(local);
  CHECK(call(c, "local-echo", "hi", 1000, &reply, msg, sizeof msg) == ATL_USAGE, "closed: %s", msg);
  /* Disconnecting with a call in flight on another thread fails that call
   * (no use of a freed client), and an actor still hosted is stopped (no
   * hang); closing it afterwards only frees it. */
  atl_actor* open_host = NULL;
  CHECK(take(atl_actor_host(c, "parking", parking_handler, NULL, &open_host), msg, sizeof msg) ==
            ATL_OK,
        "host parking: %s", msg);
  struct slow_call parked_call = {c, ATL_OK, ""};
  pthread_t parked_thread;
  pthread_create(&parked_thread, NULL, call_parked, &parked_call);
  for (int i = 0; i < 3000 && !parked; ++i) usleep(10 * 1000);
  CHECK(parked, "the parked call reached its handler");
  t0 = now();
  atl_disconnect(c);
  pthread_join(parked_thread, NULL);
  CHECK(parked_call.code == ATL_UNREACHABLE && strstr(parked_call.msg, "disconnected"),
        "the call in flight at the disconnect: %d %s", parked_call.code, parked_call.msg);
  CHECK(now() - t0 < 15.0, "the disconnect took %.1f s", now() - t0);
  atl_actor_close(open_host);
  printf("actors: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "driver") == 0) return driver();
  if (argc >= 3 && strcmp(argv[1], "host") == 0) return host(argv[2]);
  fprintf(stderr, "usage: actors_test driver | host NAME\n");
  return 2;
}
