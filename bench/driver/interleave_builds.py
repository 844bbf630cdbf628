#!/usr/bin/env python3
"""bench/driver's atl side for two builds, interleaved run by run on one machine.

Usage: bench/driver/interleave_builds.py OLD_TREE [RUNS]
OLD_TREE: a checkout built with headnode, workernode, atlctl, atl (its build/),
e.g. `git worktree add /tmp/wt-old REV` and `ninja -C build headnode workernode
atlctl atl`. Each run starts a fresh driver-mode head (2 local workers of 2 CPUs)
from that tree's binaries and runs that tree's own `run.py --side atl` against
it, with its own Python package and libatl; prints each run and a Markdown table
of the medians. No Ray (bench/driver/run.py compares with Ray)."""
import json, os, subprocess, sys
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
trees = {"old": os.path.abspath(sys.argv[1]), "new": HERE}
runs = {k: [] for k in trees}
N = int(sys.argv[2]) if len(sys.argv) > 2 else 3
for i in range(N):
    for label, root in trees.items():
        env = dict(os.environ, ATL_BIN_DIR=os.path.join(root, "build", "bin"),
                   ATL_LIBRARY=os.path.join(root, "build", "lib", "libatl.so"))
        code = f"""
import sys, json, os
sys.path.insert(0, {os.path.join(root, 'bench')!r}); sys.path.insert(0, {os.path.join(root, 'bench', 'driver')!r})
import run
c = run.AtlCluster()
try:
    print(json.dumps(run.run_side('/usr/bin/python3', ['--side', 'atl', '--address', c.address, '--tls', os.path.join(c.state, 'tls')])))
finally:
    c.stop()
"""
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            print(label, "failed", out.stdout[-2000:], out.stderr[-2000:]); sys.exit(1)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        runs[label].append(r)
        print(label, i, json.dumps(r), flush=True)
keys = list(runs["new"][0].keys())
def med(v):
    v = sorted(v); n = len(v); return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
print("| figure | old (6d01fb6) | new | new / old |")
print("|---|---:|---:|---:|")
for k in keys:
    o = med([r[k] for r in runs["old"]]); n = med([r[k] for r in runs["new"]])
    print(f"| {k} | {o:.3g} | {n:.3g} | {n / o:.2f}x |  old {[round(r[k], 3) for r in runs['old']]} new {[round(r[k], 3) for r in runs['new']]}")
