/* atl.h: atl's C API, for drivers in any language (Python through ctypes).
 * A driver connects to its job's supervisor, reads the cluster's state and
 * reserves workers' resources in placement groups, as Ray's API does.
 *
 * Conventions:
 * - Every call that can fail returns an atl_status*: NULL on success, else an
 *   error (code and one-line message) the caller frees with atl_status_free.
 *   No C++ exception ever crosses this API.
 * - Strings the library returns (char** out) are the caller's: atl_free them.
 * - Handles are opaque. A client may be used from several threads at once.
 * - Every request has a timeout: a call never hangs on a lost supervisor.
 */
#ifndef ATL_H
#define ATL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ATL_API __attribute__((visibility("default")))
#else
#define ATL_API
#endif

/* Bumped when a call changes in a way old callers would notice. */
#define ATL_API_VERSION 1

/* The version this library was built as; a caller compares it to ATL_API_VERSION. */
ATL_API int atl_api_version(void);

typedef enum atl_code {
  ATL_OK = 0,
  ATL_FAILED = 1,      /* the request was carried out and failed (a group not placed...) */
  ATL_USAGE = 2,       /* bad arguments: nothing changed */
  ATL_REFUSED = 3,     /* not allowed in the job's current state: nothing changed */
  ATL_UNREACHABLE = 4, /* the supervisor could not be reached or did not answer */
  ATL_TIMEOUT = 5,     /* what was waited for did not happen in time */
  ATL_INTERNAL = 6     /* a bug in atl: the message says what */
} atl_code;

/* "ok", "failed", "usage", "refused", "unreachable", "timeout", "internal";
 * "unknown" for any other number. */
ATL_API const char* atl_code_name(atl_code code);

typedef struct atl_status atl_status;
ATL_API atl_code atl_status_code(const atl_status* status);
ATL_API const char* atl_status_message(const atl_status* status);
ATL_API void atl_status_free(atl_status* status);

ATL_API void atl_free(char* text);

/* --- progress (any rank) ---------------------------------------------------- */

/* Tells atl's hang watch that this rank made progress (a training step
 * ended), for ranks that print rarely: touches $ATL_PROGRESS_FILE, which atl
 * gives every rank of an spmd job. Needs no connection. Returns 1 when told,
 * 0 when not run by atl (no such variable), -1 when the file cannot be
 * touched (errno says why). */
ATL_API int atl_progress(void);

/* --- connecting ------------------------------------------------------------- */

typedef struct atl_client atl_client;

/* Connects to the job's supervisor. address: "HOST:PORT", or NULL for
 * $ATL_ADDRESS (set in the driver and every rank). tls_dir: the job's
 * credentials (ca.pem, cert.pem, key.pem), or NULL for $ATL_TLS_DIR.
 * insecure: nonzero for a head started with --insecure (plain TCP). */
ATL_API atl_status* atl_connect(const char* address, const char* tls_dir, int insecure,
                                atl_client** out);
/* Ends the connection and frees the client: calls in flight on other threads
 * fail at once (ATL_UNREACHABLE, "disconnected") and have returned when this
 * returns; the client's hosted actors stop. A call that starts once this has
 * begun reads freed memory: a program whose threads may still be about to
 * call calls atl_interrupt first, waits for those threads, then disconnects.
 * NULL is fine. */
ATL_API void atl_disconnect(atl_client* client);
/* What atl_disconnect does first, leaving the client valid: calls in flight
 * fail at once and every later call fails the same way (ATL_UNREACHABLE,
 * "disconnected"), without waiting for the supervisor. NULL is fine. */
ATL_API void atl_interrupt(atl_client* client);

/* --- the cluster ----------------------------------------------------------------- */

/* The job as `atlctl status --json` shows it (state, pods, ranks...). */
ATL_API atl_status* atl_job_info(atl_client* client, char** json_out);

/* Every worker node with its resources (total, reserved, available; amounts
 * as numbers, memory in bytes), the placement groups and the pending demand:
 * {"nodes": [...], "groups": [...], "pending_demand": [...]}. */
ATL_API atl_status* atl_cluster_state(atl_client* client, char** json_out);

/* --- placement groups (driver mode) ----------------------------------------------- */

/* Reserves bundles of resources on the workers, all or nothing.
 * name: "" or NULL for none (else unique among live groups).
 * strategy: "PACK", "SPREAD", "STRICT_PACK" or "STRICT_SPREAD".
 * bundles_json: '[{"CPU": 1, "GPU": 1}, {"CPU": 1}]'.
 * timeout_ms: a group still pending then fails (0: it waits for ever).
 * Returns at once with the group's id: it may be pending (see atl_pg_wait). */
ATL_API atl_status* atl_pg_create(atl_client* client, const char* name, const char* strategy,
                                  const char* bundles_json, int64_t timeout_ms, int64_t* id_out);

/* As atl_pg_create, and the group as it is now in json_out (atl_free it):
 * a group placed at once is "CREATED" there, no atl_pg_wait needed. */
ATL_API atl_status* atl_pg_create_json(atl_client* client, const char* name, const char* strategy,
                                       const char* bundles_json, int64_t timeout_ms,
                                       int64_t* id_out, char** json_out);

/* Waits until the group is placed (its JSON in json_out, nodes per bundle).
 * Failed or removed: ATL_FAILED. Still pending after timeout_ms: ATL_TIMEOUT,
 * whose message says why it is pending (which bundle, what each node lacks). */
ATL_API atl_status* atl_pg_wait(atl_client* client, int64_t id, int64_t timeout_ms,
                                char** json_out);

/* Frees the group's resources. */
ATL_API atl_status* atl_pg_remove(atl_client* client, int64_t id);
/* A placement group (group != 0) or task (group == 0) this client made
 * outlives it (Ray's lifetime="detached"). Without it, what a client made is
 * removed (groups) or stopped (tasks) by the supervisor when the client's
 * connection ends: its process exited, or was killed. */
ATL_API atl_status* atl_disown(atl_client* client, int group, int64_t id);

/* --- tasks (driver mode) ------------------------------------------------------------ */

/* Starts `command` (run by /bin/sh -c) on a worker pod: in bundle `bundle` of
 * placement group `group` (group > 0; the group must be CREATED), else on
 * `pod` (NULL or "": the active pod running the fewest tasks). env: NULL or a
 * NULL-terminated list of "KEY=VALUE" laid over the pod's (with MASTER_ADDR,
 * ATL_ADDRESS... and ATL_TASK_ID). working_dir: NULL for the job's. Returns
 * once the process runs (its id in task_out). A task dies with its group, its
 * driver, and atlctl stop. */
ATL_API atl_status* atl_task_start(atl_client* client, int64_t group, int32_t bundle,
                                   const char* pod, const char* command, const char* const* env,
                                   const char* working_dir, int32_t* task_out);

/* Starts a task as atl_task_start does, detached from the start (it
 * outlives this client, as after atl_disown) and, with restarts != 0,
 * started again by the supervisor as it was (command, env, bundle or pod)
 * each time it ends other than by atl_task_kill: at most `restarts` times
 * (-1: without end), its env then with ATL_TASK_RESTARTS=n (the how-manyth),
 * later each time it dies young (up to 30 s). Ray's max_restarts of a
 * detached actor, whose driver may be gone. atl_task_kill of its first id
 * ends the one running now and the restarts. own_group != 0: the group is
 * the task's own reservation, removed by the supervisor once the task ended
 * for good. */
ATL_API atl_status* atl_task_start_detached(atl_client* client, int64_t group, int32_t bundle,
                                            const char* pod, const char* command,
                                            const char* const* env, const char* working_dir,
                                            int32_t restarts, int own_group, int32_t* task_out);

/* Waits for the task's end: NULL with its exit code (or the signal that
 * killed it, else 0) when it ran to its end; ATL_FAILED when it never ran or
 * its pod was lost (the message says which); ATL_TIMEOUT when it still runs
 * after timeout_ms (0: just look). */
ATL_API atl_status* atl_task_wait(atl_client* client, int32_t task, int64_t timeout_ms,
                                  int32_t* exit_code_out, int32_t* signal_out);

/* The task's output (stdout and stderr, as lines were written) from byte
 * `offset`: at most 1 MiB into data_out (atl_free it; not NUL-terminated
 * beyond size_out), and the offset to read from next. Nothing new: size 0. */
ATL_API atl_status* atl_task_output(atl_client* client, int32_t task, int64_t offset,
                                    char** data_out, int64_t* size_out, int64_t* next_offset_out);

/* The result the task handed back: one line of text it wrote as
 * "result <text>\n" to the descriptor in $ATL_CONTROL_FD (the Python package
 * sends its return value so). Waits like atl_task_wait; result_out is NULL
 * when it sent none; ATL_FAILED when its result was over 8 MiB. */
ATL_API atl_status* atl_task_result(atl_client* client, int32_t task, int64_t timeout_ms,
                                    char** result_out);

/* SIGTERM to the task's process tree (SIGKILL after the job's grace). */
ATL_API atl_status* atl_task_kill(atl_client* client, int32_t task);

/* --- named actors ------------------------------------------------------------------ */

/* A process of the job hosts an actor under a name: its handler is the
 * process's own callback, run on a thread of the library (one call at a
 * time, in arrival order; never on CAF's scheduler). The handler answers
 * through `reply`: atl_reply_set (bytes back) or atl_reply_error (the caller
 * gets ATL_FAILED with the message); neither means an empty reply. */
typedef struct atl_reply atl_reply;
typedef void (*atl_actor_fn)(void* user_data, const char* request, int64_t size, atl_reply* reply);
ATL_API void atl_reply_set(atl_reply* reply, const char* data, int64_t size);
ATL_API void atl_reply_error(atl_reply* reply, const char* message);

typedef struct atl_actor atl_actor;
/* Hosts `fn` as actor `name` (unique in the job: a taken name is ATL_REFUSED). */
ATL_API atl_status* atl_actor_host(atl_client* client, const char* name, atl_actor_fn fn,
                                   void* user_data, atl_actor** out);
/* Unregisters and stops it; returns once no call of it runs any more.
 * Pending callers get ATL_FAILED. NULL is fine. atl_disconnect stops the
 * client's actors still hosted; atl_actor_close then only frees them. */
ATL_API void atl_actor_close(atl_actor* actor);

/* Calls actor `name` with `size` bytes; its reply (atl_free it; size in
 * reply_size) within timeout_ms, else ATL_TIMEOUT. No such actor: ATL_USAGE;
 * its handler's error or its host's death (noticed as the connection drops,
 * or a hung host after the heartbeat timeout): ATL_FAILED. */
ATL_API atl_status* atl_actor_call(atl_client* client, const char* name, const char* request,
                                   int64_t size, int64_t timeout_ms, char** reply_out,
                                   int64_t* reply_size);

/* The job's named actors as JSON: [{"name", "owner", "calls", "pending"}]. */
ATL_API atl_status* atl_actor_list(atl_client* client, char** json_out);

#ifdef __cplusplus
}
#endif

#endif /* ATL_H */
