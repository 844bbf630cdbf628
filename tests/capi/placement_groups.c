/* The C API from C, run as the driver of a driver-mode job (ATL_ADDRESS and
 * ATL_TLS_DIR come from atl): placement groups placed and refused as Ray
 * would, with the "why"; atomic under two racing clients; remove frees; bad
 * input refused; a lost node's bundle placed again.
 *
 *   placement_groups basics    workers: 2, each --resources '{"slot": 1}'
 *   placement_groups loss FILE workers: 3; touches FILE once placed, then
 *                              waits for the bundle of the killed node to move
 * Exits 0 when every check passed; each failed check prints one line. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atl.h"
#include "check.h"

static atl_client* connect_or_die(void) {
  atl_client* c = NULL;
  char msg[1024];
  atl_code code = take(atl_connect(NULL, NULL, 0, &c), msg, sizeof msg);
  if (code != ATL_OK) {
    fprintf(stderr, "FAIL: atl_connect: %s\n", msg);
    exit(1);
  }
  return c;
}

static int64_t create(atl_client* c, const char* strategy, const char* bundles, int64_t timeout,
                      atl_code want, char* msg, size_t size) {
  int64_t id = -1;
  atl_code code = take(atl_pg_create(c, NULL, strategy, bundles, timeout, &id), msg, size);
  CHECK(code == want, "create %s %s: code %d, want %d (%s)", strategy, bundles, code, want, msg);
  return id;
}

/* --- basics ------------------------------------------------------------------- */

struct race {
  atl_client* client;
  int64_t id;
  atl_code waited;
};

static void* race_for_the_last_slot(void* arg) {
  struct race* r = arg;
  char msg[1024];
  take(atl_pg_create(r->client, NULL, "PACK", "[{\"slot\": 1}]", 0, &r->id), msg, sizeof msg);
  r->waited = take(atl_pg_wait(r->client, r->id, 1500, NULL), msg, sizeof msg);
  return NULL;
}

static int basics(void) {
  char msg[2048];
  char* json = NULL;
  CHECK(atl_api_version() == ATL_API_VERSION, "api version %d", atl_api_version());
  atl_status_free(NULL); /* allowed */
  CHECK(atl_status_code(NULL) == ATL_OK, "a NULL status is success");

  /* Connecting: a bad address is a usage error, an unreachable one says so. */
  atl_client* none = NULL;
  CHECK(take(atl_connect("no-port", NULL, 0, &none), msg, sizeof msg) == ATL_USAGE,
        "bad address: %s", msg);
  CHECK(none == NULL, "no client on failure");
  CHECK(take(atl_connect("127.0.0.1:1", NULL, 0, &none), msg, sizeof msg) == ATL_UNREACHABLE,
        "unreachable: %s", msg);
  CHECK(take(atl_cluster_state(NULL, &json), msg, sizeof msg) == ATL_USAGE, "NULL client");

  atl_client* c = connect_or_die();
  CHECK(take(atl_job_info(c, &json), msg, sizeof msg) == ATL_OK, "info: %s", msg);
  CHECK(json && strstr(json, "\"mode\":\"driver\""), "info: %s", json ? json : "(null)");
  atl_free(json);
  CHECK(take(atl_cluster_state(c, &json), msg, sizeof msg) == ATL_OK, "cluster: %s", msg);
  CHECK(json && strstr(json, "\"slot\":1.0"), "each node offers a slot: %s", json);
  atl_free(json);

  /* STRICT_SPREAD over both nodes: one slot each. */
  int64_t spread =
      create(c, "STRICT_SPREAD", "[{\"slot\": 1}, {\"slot\": 1}]", 0, ATL_OK, msg, sizeof msg);
  CHECK(take(atl_pg_wait(c, spread, 5000, &json), msg, sizeof msg) == ATL_OK, "wait: %s", msg);
  CHECK(json && strstr(json, "\"state\":\"CREATED\"") && strstr(json, "worker-0") &&
            strstr(json, "worker-1"),
        "spread over both workers: %s", json);
  atl_free(json);

  /* Nothing is left: a new group pends and says why; nothing of it is reserved. */
  int64_t waiting = create(c, "PACK", "[{\"slot\": 1}]", 0, ATL_OK, msg, sizeof msg);
  CHECK(take(atl_pg_wait(c, waiting, 300, NULL), msg, sizeof msg) == ATL_TIMEOUT, "pending: %s",
        msg);
  CHECK(strstr(msg, "PENDING") && strstr(msg, "fits no node") && strstr(msg, "slot 0 of 1 free"),
        "why: %s", msg);
  CHECK(take(atl_cluster_state(c, &json), msg, sizeof msg) == ATL_OK, "cluster: %s", msg);
  CHECK(json && strstr(json, "\"pending_demand\":[{\"slot\":1.0}]"), "demand: %s", json);
  atl_free(json);

  /* Remove frees: the waiting group is placed. */
  CHECK(take(atl_pg_remove(c, spread), msg, sizeof msg) == ATL_OK, "remove: %s", msg);
  CHECK(take(atl_pg_wait(c, waiting, 5000, &json), msg, sizeof msg) == ATL_OK, "placed: %s", msg);
  atl_free(json);
  CHECK(take(atl_pg_remove(c, spread), msg, sizeof msg) == ATL_REFUSED, "removed twice: %s", msg);
  CHECK(take(atl_pg_wait(c, spread, 100, NULL), msg, sizeof msg) == ATL_FAILED,
        "wait on removed: %s", msg);

  /* A group placed at once says so in the create's answer. */
  int64_t quick = -1;
  CHECK(take(atl_pg_create_json(c, NULL, "PACK", "[{\"CPU\": 0.25}]", 0, &quick, &json), msg,
             sizeof msg) == ATL_OK,
        "create_json: %s", msg);
  CHECK(json && strstr(json, "\"state\":\"CREATED\"") && quick > 0, "created at once: %s",
        json ? json : "(null)");
  atl_free(json);
  CHECK(take(atl_pg_remove(c, quick), msg, sizeof msg) == ATL_OK, "remove: %s", msg);

  /* STRICT_PACK of two slots never fits one node: it fails at its deadline. */
  int64_t packed =
      create(c, "STRICT_PACK", "[{\"slot\": 1}, {\"slot\": 1}]", 200, ATL_OK, msg, sizeof msg);
  CHECK(take(atl_pg_wait(c, packed, 5000, NULL), msg, sizeof msg) == ATL_FAILED, "deadline: %s",
        msg);
  CHECK(strstr(msg, "not placed by its deadline: STRICT_PACK needs {\"slot\": 2} on one node"),
        "deadline why: %s", msg);

  /* Two clients race for the one slot left: exactly one wins, the other pends. */
  atl_client* other = connect_or_die();
  struct race a = {c, -1, ATL_OK}, b = {other, -1, ATL_OK};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, race_for_the_last_slot, &a);
  pthread_create(&tb, NULL, race_for_the_last_slot, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK((a.waited == ATL_OK) != (b.waited == ATL_OK), "one winner: %d %d", a.waited, b.waited);
  CHECK(a.waited == ATL_TIMEOUT || b.waited == ATL_TIMEOUT, "the loser pends: %d %d", a.waited,
        b.waited);
  atl_disconnect(other);

  /* Bad requests: refused with a line, nothing changes. */
  create(c, "BOGUS", "[{\"slot\": 1}]", 0, ATL_USAGE, msg, sizeof msg);
  CHECK(strstr(msg, "unknown placement strategy 'BOGUS'"), "%s", msg);
  create(c, "PACK", "[{}]", 0, ATL_USAGE, msg, sizeof msg);
  create(c, "PACK", "[]", 0, ATL_USAGE, msg, sizeof msg);
  create(c, "PACK", "not json", 0, ATL_USAGE, msg, sizeof msg);
  create(c, "PACK", "[{\"slot\": -1}]", 0, ATL_USAGE, msg, sizeof msg);
  create(c, "PACK", "[{\"slot\": 1}]", -5, ATL_USAGE, msg, sizeof msg);
  CHECK(take(atl_pg_create(c, "named", "PACK", "[{\"CPU\": 0.5}]", 0, NULL), msg, sizeof msg) ==
            ATL_OK,
        "named: %s", msg);
  CHECK(take(atl_pg_create(c, "named", "PACK", "[{\"CPU\": 0.5}]", 0, NULL), msg, sizeof msg) ==
            ATL_USAGE,
        "name taken: %s", msg);
  CHECK(take(atl_pg_remove(c, 9999), msg, sizeof msg) == ATL_REFUSED, "unknown id: %s", msg);
  CHECK(take(atl_pg_wait(c, 9999, 10, NULL), msg, sizeof msg) == ATL_USAGE, "unknown wait");
  CHECK(take(atl_pg_create(c, NULL, NULL, "[]", 0, NULL), msg, sizeof msg) == ATL_USAGE,
        "NULL strategy");
  atl_disconnect(c);
  return failures == 0 ? 0 : 1;
}

/* --- a lost node ----------------------------------------------------------------- */

static int loss(const char* marker) {
  char msg[2048];
  char* json = NULL;
  atl_client* c = connect_or_die();
  int64_t id =
      create(c, "STRICT_SPREAD", "[{\"slot\": 1}, {\"slot\": 1}]", 0, ATL_OK, msg, sizeof msg);
  CHECK(take(atl_pg_wait(c, id, 10000, &json), msg, sizeof msg) == ATL_OK, "placed: %s", msg);
  printf("placed: %s\n", json ? json : "");
  fflush(stdout);
  int on_worker_1 = json && strstr(json, "worker-1") != NULL;
  atl_free(json);
  CHECK(on_worker_1, "worker-1 holds a bundle (it is the one killed)");
  FILE* f = fopen(marker, "w");
  if (f) fclose(f);
  /* The test kills worker-1: its bundle moves to worker-2, the other stays. */
  for (int i = 0; i < 600; ++i) {
    CHECK(take(atl_cluster_state(c, &json), msg, sizeof msg) == ATL_OK, "cluster: %s", msg);
    /* worker-1 is gone from the nodes and from the group, which is whole again. */
    int moved = json && strstr(json, "\"state\":\"CREATED\"") && strstr(json, "worker-2\"]") &&
                !strstr(json, "worker-1\"");
    if (moved) {
      printf("re-placed: %s\n", json);
      atl_free(json);
      atl_disconnect(c);
      return failures == 0 ? 0 : 1;
    }
    atl_free(json);
    usleep(100 * 1000);
  }
  fprintf(stderr, "FAIL: the lost node's bundle was not placed again within 60 s\n");
  atl_disconnect(c);
  return 1;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "basics") == 0) return basics();
  if (argc >= 3 && strcmp(argv[1], "loss") == 0) return loss(argv[2]);
  fprintf(stderr, "usage: placement_groups basics | loss FILE\n");
  return 2;
}
