/* atl_progress() from C: as a rank of an spmd job it says "progress" for a
 * while without printing anything ("spin SECONDS"); "outside" checks that
 * outside atl it tells nobody and says so (0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atl.h"

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "outside") == 0) return atl_progress() == 0 ? 0 : 1;
  if (argc < 3 || strcmp(argv[1], "spin") != 0) {
    fprintf(stderr, "usage: atl_capi_progress spin SECONDS | outside\n");
    return 2;
  }
  const int rounds = atoi(argv[2]) * 10;
  for (int i = 0; i < rounds; ++i) {
    if (atl_progress() != 1) {
      fprintf(stderr, "atl_progress failed\n");
      return 1;
    }
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  return 0;
}
