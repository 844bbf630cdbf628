#!/usr/bin/env python3
"""bench/launch: time from `headnode` start to every rank running, and to the
job's end, for 1, 4 and 16 local workers (1 rank each). Each rank records the
moment it started in a file; the median of several runs is reported.

Usage: bench/launch/tls.py [--runs N] [--workers 1,4,16] [--out bench/results/launch-tls.md]
(a quick A/B of one size: --workers 1 --out /tmp/launch-tls.md)
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402


def one_run(workers, tls):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [common.binary("headnode"), "--port", "0", "--workers", str(workers),
               "--local-workers", str(workers), "--state-dir", os.path.join(tmp, "state")]
        if not tls:
            cmd.append("--insecure")
        cmd += ["--", f"date +%s.%N > {tmp}/started.$RANK"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t_end = time.time()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU of the whole tree (head, workers, ranks): what TLS adds per
        # process, less noisy than wall time on 2 shared cores.
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"job with {workers} workers failed ({proc.returncode})")
        starts = []
        for rank in range(workers):
            with open(os.path.join(tmp, f"started.{rank}")) as f:
                starts.append(float(f.read()))
        return max(starts) - t0, t_end - t0, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workers", default="1,4,16",
                    type=lambda s: [int(w) for w in s.split(",")])
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "launch-tls.md"))
    args = ap.parse_args()
    rows = []
    for workers in args.workers:
        # TLS on and off interleaved run by run: the machine's drift (2
        # shared cores) falls on both alike.
        runs = {True: [], False: []}
        for _ in range(args.runs):
            for tls in (True, False):
                runs[tls].append(one_run(workers, tls))
        for tls in (True, False):
            r = runs[tls]
            running = common.median([x[0] for x in r])
            end = common.median([x[1] for x in r])
            cpu = common.median([x[2] for x in r])
            rows.append((workers, tls, running, end, min(x[1] for x in r), max(x[1] for x in r),
                         cpu))
            print(f"{workers:>3} workers, TLS {'on ' if tls else 'off'}: all ranks running "
                  f"{running*1000:.0f} ms, job end {end*1000:.0f} ms, CPU {cpu*1000:.0f} ms",
                  flush=True)
    lines = [
        "# bench/launch: head start to ranks running and to job end",
        "",
        f"Machine: {common.machine()}.",
        f"Command: `bench/launch/tls.py --runs {args.runs}` (median of {args.runs} runs; "
        "local workers, 1 rank each, entrypoint records its start time).",
        "TLS on is the default (mutual TLS, a fresh job CA made by the head: ECDSA P-256);",
        "off is `--insecure`.",
        "",
        "| workers | TLS | all ranks running (ms) | job end (ms) | job end min–max (ms) "
        "| CPU, all processes (ms) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for w, tls, running, end, lo, hi, cpu in rows:
        lines.append(f"| {w} | {'on' if tls else 'off'} | {running*1000:.0f} | {end*1000:.0f} | "
                     f"{lo*1000:.0f}–{hi*1000:.0f} | {cpu*1000:.0f} |")
    by = {(w, t): end for w, t, _, end, _, _, _ in rows}
    cpu_by = {(w, t): cpu for w, t, _, _, _, _, cpu in rows}
    lines.append("")
    lines.append("TLS on / off, job end: " + ", ".join(
        f"{w} workers {by[(w, True)] / by[(w, False)]:.2f}x" for w in args.workers) +
        " (target: no more than 1.2x); CPU: " + ", ".join(
        f"{w} workers +{(cpu_by[(w, True)] - cpu_by[(w, False)]) * 1000 / (w + 1):.1f} ms a "
        "process" for w in args.workers) + ".")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
