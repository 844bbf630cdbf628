"""The driver bench/scale runs on the head (driver mode): creates GROUPS
placement groups of 8 one-CPU bundles (STRICT_PACK: one pod's worth each),
waits until every one is ready, and prints the time. Uses atl's Python
package with the job's ATL_ADDRESS and credentials; no warm workers."""
import os
import sys
import time

sys.path.insert(0, os.environ["ATL_PYTHON_DIR"])
import atl  # noqa: E402

groups = int(sys.argv[1])
atl.init(workers_per_node=0)
t0 = time.time()
pgs = [atl.placement_group([{"CPU": 1}] * 8, strategy="STRICT_PACK") for _ in range(groups)]
created = time.time() - t0
for pg in pgs:
    pg.ready(timeout=600)
ready = time.time() - t0
pods = {pod for pg in pgs for pod in pg.bundle_nodes}
print("PG-RESULT groups=%d created_s=%.3f ready_s=%.3f pods=%d" % (groups, created, ready, len(pods)),
      flush=True)
atl.shutdown()
