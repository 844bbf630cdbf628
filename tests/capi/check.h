/* What the C API's tests share: CHECK (one line per failed check, counted in
 * `failures`), take() (a status's code and message, then freed) and now(). */
#ifndef ATL_TESTS_CAPI_CHECK_H
#define ATL_TESTS_CAPI_CHECK_H

#include <stdio.h>
#include <time.h>

#include "atl.h"

static int failures = 0;

#define CHECK(cond, ...)                           \
  do {                                             \
    if (!(cond)) {                                 \
      ++failures;                                  \
      fprintf(stderr, "FAIL line %d: ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);                \
      fprintf(stderr, "\n");                       \
    }                                              \
  } while (0)

/* Takes the status: its code (ATL_OK for NULL), its message copied to `msg`. */
static inline atl_code take(atl_status* s, char* msg, size_t size) {
  atl_code code = atl_status_code(s);
  if (msg) snprintf(msg, size, "%s", atl_status_message(s));
  atl_status_free(s);
  return code;
}

/* Seconds on the monotonic clock. */
static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
