#!/usr/bin/env python3
"""bench/fanout: wall time of `atlctl run -r all true` on 8 and 32 local ranks
against `mpirun --oversubscribe -np N true` (OpenMPI) in the same run, median
of --runs each, and against Ray 2.60 at its defaults (build/ray-venv: a warm
driver's N tasks timed in the driver, and a fresh driver process timed whole;
bench/launch/run.py's Ray side). The atl cluster is started once per size and
parked in debugStop; each timed run is followed by an (untimed) `atlctl stop`.

Usage: bench/fanout/run.py [--runs 10] [--out bench/results/fanout.md]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "launch"))
import run as launch  # noqa: E402  (bench/launch/run.py: its Ray side)

SIZES = ((8, 2, 4), (32, 4, 8))  # ranks, workers, ranks per worker


timed = launch.timed  # the whole process, killed (None) past its limit


def atl_times(workers, per_node, runs, tmp):
    head = subprocess.Popen(
        [common.binary("headnode"), "--port", "0", "--workers", str(workers), "--nproc-per-node",
         str(per_node), "--local-workers", str(workers), "--state-dir", os.path.join(tmp, "state"),
         "--grace", "2s", "--", "sleep 600"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        address_file = os.path.join(tmp, "state", "address")
        ctl = [common.binary("atlctl"), "--address"]
        deadline = time.time() + 60
        while True:
            if os.path.exists(address_file):
                address = open(address_file).read().strip()
                out = subprocess.run(ctl + [address, "status"], capture_output=True, text=True)
                if out.stdout.strip() == "Job status:  command":
                    break
            if time.time() > deadline:
                raise SystemExit("cluster did not come up")
            time.sleep(0.1)
        timed(ctl + [address, "stop"])
        times = []
        for _ in range(runs):
            times.append(timed(ctl + [address, "run", "-r", "all", "true"]))
            timed(ctl + [address, "stop"])
        return times
    finally:
        head.terminate()
        head.wait(timeout=60)


MPI_LIMIT_S = 20


def mpi_times(ranks, runs):
    """mpirun's times; OpenMPI 4.1 sometimes hangs at exit here: those runs are
    killed after MPI_LIMIT_S, counted, and left out of the median."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), "true"]
    timed(cmd, env, MPI_LIMIT_S)  # warm the page cache
    times, hangs = [], 0
    while len(times) < runs and hangs < 3 * runs:
        t = timed(cmd, env, MPI_LIMIT_S)
        if t is None:
            hangs += 1
        else:
            times.append(t)
    return times, hangs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "fanout.md"))
    args = ap.parse_args()
    if not shutil.which("mpirun"):
        raise SystemExit("mpirun not found: scripts/setup.sh --tests installs openmpi-bin")
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True,
                             env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")).stdout.splitlines()[0]
    rows = []
    ray = {ranks: launch.ray_side(args.runs, max(3, args.runs // 2), tasks=ranks)
           for ranks, _, _ in SIZES}
    with tempfile.TemporaryDirectory() as tmp:
        for ranks, workers, per_node in SIZES:
            atl = atl_times(workers, per_node, args.runs, os.path.join(tmp, str(ranks)))
            mpi, hangs = mpi_times(ranks, args.runs)
            a, m = common.median(atl), common.median(mpi)
            rows.append((ranks, workers, per_node, a, min(atl), max(atl), m, min(mpi), max(mpi),
                         hangs))
            print(f"{ranks} ranks: atl {a*1000:.0f} ms, mpirun {m*1000:.0f} ms, ratio {a/m:.2f}",
                  flush=True)
    lines = [
        "# bench/fanout: `atlctl run -r all true` against `mpirun -np N true`",
        "",
        f"Machine: {common.machine()}; {version}.",
        f"Command: `bench/fanout/run.py --runs {args.runs}` (median of {args.runs}; min-max in brackets).",
        "atl: a running local cluster parked in debugStop; the time is the whole `atlctl run`",
        "process (connect, start on every rank, wait for every exit, print). mpirun: the whole",
        "`mpirun --oversubscribe -np N true` process, same machine, same run.",
        "",
        "Ray: `ray start --head` at its defaults (CPUs detected, tasks at num_cpus=1); 'warm':",
        "N no-op tasks from a driver that already ran a round, timed inside it; 'fresh': a new",
        "driver process (connect, N no-op tasks, exit) timed whole.",
        "",
        "| ranks | cluster | atl (ms) | mpirun (ms) | mpirun hangs | atl / mpirun | Ray warm (ms) "
        "| atl / Ray warm | Ray fresh driver (ms) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r, w, p, a, alo, ahi, m, mlo, mhi, hangs in rows:
        got, why = ray[r]
        warm = f"{got['noop']*1000:.1f} | {a/got['noop']:.2f}x | {got['fresh']*1000:.0f}" if got \
            else f"{why} | | "
        lines.append(f"| {r} | {w} workers x {p} | {a*1000:.0f} [{alo*1000:.0f}-{ahi*1000:.0f}] | "
                     f"{m*1000:.0f} [{mlo*1000:.0f}-{mhi*1000:.0f}] | {hangs} | **{a/m:.2f}x** | "
                     f"{warm} |")
    lines += ["",
              f"Target: atl <= 0.5x mpirun. 'mpirun hangs': runs of mpirun that had not exited "
              f"after {MPI_LIMIT_S} s (OpenMPI 4.1 on this VM; killed, left out of the median); "
              "no atl run hung."]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
