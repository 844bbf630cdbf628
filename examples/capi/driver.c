/* A driver in C (headnode --mode driver): one bundle per worker, a command in
 * each, their output and exit codes gathered; an actor of its own, called by
 * name. Build: part of the project (build/bin/atl-example-driver); anywhere
 * else: cc driver.c -I libs/capi/include -L build/lib -latl.
 *
 *   headnode --mode driver --workers 2 --local-workers 2 -- build/bin/atl-example-driver
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atl.h"

/* Prints the error (if any) and says whether the call failed. */
static int failed(atl_status* s, const char* what) {
  if (!s) return 0;
  fprintf(stderr, "%s: %s\n", what, atl_status_message(s));
  atl_status_free(s);
  return 1;
}

static void greet(void* user, const char* request, int64_t size, atl_reply* reply) {
  (void)user;
  char out[256];
  int n = snprintf(out, sizeof out, "hello, %.*s", (int)size, request);
  atl_reply_set(reply, out, n);
}

int main(void) {
  atl_client* c = NULL;
  if (failed(atl_connect(NULL, NULL, 0, &c), "connect")) return 1;

  /* How many workers: count the nodes in the cluster state. */
  char* state = NULL;
  if (failed(atl_cluster_state(c, &state), "cluster state")) return 1;
  int workers = 0;
  for (const char* p = state; (p = strstr(p, "\"pod\":")) != NULL; ++p) ++workers;
  atl_free(state);
  printf("%d workers\n", workers);

  /* One CPU on each worker, all or nothing. */
  char bundles[1024] = "[";
  for (int i = 0; i < workers; ++i) strcat(bundles, i ? ", {\"CPU\": 1}" : "{\"CPU\": 1}");
  strcat(bundles, "]");
  int64_t group = 0;
  if (failed(atl_pg_create(c, "example", "STRICT_SPREAD", bundles, 60000, &group), "group") ||
      failed(atl_pg_wait(c, group, 60000, NULL), "group ready"))
    return 1;

  int32_t tasks[64];
  for (int i = 0; i < workers && i < 64; ++i)
    if (failed(
            atl_task_start(c, group, i, NULL, "echo task on $ATL_POD_NAME", NULL, NULL, &tasks[i]),
            "task"))
      return 1;
  int bad = 0;
  for (int i = 0; i < workers && i < 64; ++i) {
    int32_t code = -1, sig = 0;
    if (failed(atl_task_wait(c, tasks[i], 60000, &code, &sig), "wait")) return 1;
    char* out = NULL;
    int64_t size = 0, next = 0;
    if (failed(atl_task_output(c, tasks[i], 0, &out, &size, &next), "output")) return 1;
    printf("bundle %d: exit %d: %s", i, code, out ? out : "\n");
    atl_free(out);
    bad |= code != 0;
  }

  /* An actor of this driver, called by its name (any process of the job could). */
  atl_actor* actor = NULL;
  if (failed(atl_actor_host(c, "greeter", greet, NULL, &actor), "host")) return 1;
  char* reply = NULL;
  int64_t reply_size = 0;
  if (failed(atl_actor_call(c, "greeter", "world", 5, 5000, &reply, &reply_size), "call")) return 1;
  printf("greeter says: %s\n", reply);
  atl_free(reply);
  atl_actor_close(actor);
  atl_pg_remove(c, group);
  atl_disconnect(c);
  return bad;
}
