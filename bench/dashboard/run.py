#!/usr/bin/env python3
"""bench/dashboard: does following logs on the dashboard slow the job's log
path? bench/logs' workload (one rank printing 100-byte lines through atl,
TLS on) timed with no dashboard client, and with 100 clients following the
same rank's log over HTTPS (Server-Sent Events) the whole time: the worst
case, every follower on the fastest log. Runs alternate; no line may be lost.

The time is from the moment the rank starts printing (a go file) to the
head's exit (the job's end, the head's teardown). Followers are curl
processes on the same 2 cores: their TLS work is counted against atl,
as a pessimist would.

Usage: bench/dashboard/run.py [--mb 200] [--runs 7] [--followers 100]
                              [--tmp /dev/shm] [--out bench/results/dashboard.md]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import re
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.ROOT, "bench", "logs"))
from run import LINE_BYTES, count_lines, generator  # noqa: E402


SKIPPED = re.compile(rb"event: skipped\ndata: (\d+)\n")


def start_followers(n, url, token, tmp, tag):
    """n curl processes (an efficient client in C, as a browser's is) each
    following rank-0's log into a file of its own."""
    outs, procs = [], []
    for i in range(n):
        out = os.path.join(tmp, "follow-%s-%d" % (tag, i))
        outs.append(out)
        procs.append(subprocess.Popen(
            # -k: the job's certificate names no host (TLS still encrypts).
            ["curl", "-sN", "-k", "-H", "Authorization: Bearer " + token,
             "-o", out, url + "/api/logs/rank-0/follow?offset=0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    deadline = time.time() + 60
    for out in outs:  # the first event (the rank's "ready" line) has come
        while not (os.path.exists(out) and os.path.getsize(out) > 0):
            if time.time() > deadline:
                raise SystemExit("a follower did not connect")
            time.sleep(0.01)
    return procs, outs


def follower_figures(outs):
    got, skipped = [], []
    for out in outs:
        data = open(out, "rb").read()
        got.append(len(data))
        skipped.append(sum(int(m.group(1)) for m in SKIPPED.finditer(data)))
        os.remove(out)
    return got, skipped


def one_run(cmd, tmp, run, followers):
    head, out, state, log, go, url, token = common.start_printing_job(
        cmd, tmp, "%d-%d" % (run, followers))
    procs, outs = start_followers(followers, url, token, tmp, "%d-%d" % (run, followers))
    code, took = common.go_and_time(head, go)
    for p in procs:
        p.wait(60)
    if code != 0:
        raise SystemExit("the job failed (%d): see %s" % (code, out.name))
    lines = count_lines(log) - 1  # the "ready" line
    shutil.rmtree(state)
    got, skipped = follower_figures(outs)
    return took, lines, got, skipped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--followers", type=int, default=100)
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the state dirs go (default /dev/shm)")
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "dashboard.md"))
    args = ap.parse_args()
    if not shutil.which("curl"):
        raise SystemExit("bench/dashboard needs curl (apt-get install curl)")
    lines = args.mb * 1_000_000 // LINE_BYTES
    cmd = generator(lines)
    alone, followed, received, skipped = [], [], [], []
    # The state dirs on tmpfs: the disk's writeback of the previous run's
    # hundreds of MB would be noise larger than what is measured.
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for run in range(args.runs):
            for n, times in ((0, alone), (args.followers, followed)):
                took, got, per, skip = one_run(cmd, tmp, run, n)
                if got != lines:
                    raise SystemExit("lines lost with %d followers: %d of %d" % (n, got, lines))
                times.append(took)
                if n:
                    received.append(common.median(per))
                    skipped.append(common.median(skip))
            print("alone %.2f s, %d followers %.2f s (each got %.0f KiB, skipped %.1f MB)"
                  % (alone[-1], args.followers, followed[-1], received[-1] / 1024,
                     skipped[-1] / 1e6), flush=True)
    a, f = common.median(alone), common.median(followed)
    mb = lines * LINE_BYTES / 1e6
    slowdown = (f / a - 1) * 100
    paired = (common.median([y / x for x, y in zip(alone, followed)]) - 1) * 100
    report = [
        "# bench/dashboard: 100 log followers on the dashboard during bench/logs",
        "",
        f"Machine: {common.machine()}.",
        f"Command: `bench/dashboard/run.py --mb {args.mb} --runs {args.runs} "
        f"--followers {args.followers}` (median of {args.runs}, runs alternating).",
        f"Workload: bench/logs': {lines:,} lines of {LINE_BYTES} bytes ({mb:.0f} MB) from one rank",
        "through atl (TLS on), timed from the rank's first printed byte to the head's exit;",
        f"state dirs (logs) in {args.tmp or 'the default temp dir'}, so that disk writeback is no noise.",
        f"Followers: {args.followers} HTTPS clients (curl processes, on the same cores) on",
        "`/api/logs/rank-0/follow`, all connected before the rank starts printing.",
        "",
        "| dashboard clients | wall (s) | MB/s | lines in log |",
        "|---|---:|---:|---:|",
        f"| none | {a:.2f} | {mb/a:.0f} | {lines:,} |",
        f"| {args.followers} following rank-0 | {f:.2f} | {mb/f:.0f} | {lines:,} (none lost) |",
        "",
        f"Slowdown: **{slowdown:+.1f}%** of the median (target <= +10%); the median of the "
        f"paired ratios: {paired:+.1f}%. Each follower received a median of "
        f"{common.median(received)/1024:.0f} KiB and was told of {common.median(skipped)/1e6:.0f} MB "
        "skipped: a follower gets at most 64 KiB per 500 ms, and one more than 1 MiB behind jumps "
        "to the last 16 KiB (a page cannot show 200 MB/s; the whole log stays in the file).",
        *common.paired_lines(alone, followed, "followed", "followed"),
    ]
    with open(args.out, "w") as out:
        out.write("\n".join(report) + "\n")
    print("\n".join(report[-2:]))
    print("wrote " + args.out)


if __name__ == "__main__":
    main()
