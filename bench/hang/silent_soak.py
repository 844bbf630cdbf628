#!/usr/bin/env python3
"""bench/hang/silent_soak.py: ranks that compute in silence, as native code
(a C loop: no Python, so the diagnosis attaches gdb), under the hang watch
at --hang-timeout 10s for --minutes (10 by default). What is counted:
verdicts (`job hung`), restarts, the watch's suspect periods and diagnoses,
and every moment a rank was seen stopped ('t' or 'T' in /proc/PID/stat,
sampled every 20 ms): how often the diagnosis stopped it and for how long.
Writes bench/results/hang-silent-soak.md.

Usage: bench/hang/silent_soak.py [--minutes M]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import ROOT, binary, machine  # noqa: E402

SPIN = r"""
#include <stdio.h>
int main(void) {
  volatile unsigned long x = 0;
  for (;;) { for (unsigned long i = 0; i < 100000000UL; ++i) x += i ^ (x >> 3); }
}
"""


def rank_pids():
    """The spinner processes (by their comm: the bench names its binary)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() == "atl-silent-spin":
                    out.append(int(entry))
        except OSError:
            pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="atl-soak-")
    spin = os.path.join(work, "atl-silent-spin")
    with open(spin + ".c", "w") as f:
        f.write(SPIN)
    subprocess.run(["cc", "-O1", "-o", spin, spin + ".c"], check=True)
    out_path = os.path.join(work, "head.out")
    env = dict(os.environ)
    with open(out_path, "w") as out:
        head = subprocess.Popen(
            [binary("headnode"), "--workers", "2", "--local-workers", "2", "--hang-timeout", "10s",
             "--state-dir", os.path.join(work, "state"), "--", spin],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    start = time.time()
    deadline = start + args.minutes * 60
    samples = stopped = 0
    stops = []  # (pid, seconds) per stop seen
    open_stop = {}
    try:
        while time.time() < deadline:
            for pid in rank_pids():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                samples += 1
                now = time.time()
                if state in ("t", "T"):
                    stopped += 1
                    open_stop.setdefault(pid, now)
                elif pid in open_stop:
                    stops.append((pid, now - open_stop.pop(pid)))
            time.sleep(0.02)
    finally:
        os.killpg(head.pid, 15)
        head.wait(timeout=60)
    with open(out_path) as f:
        text = f.read()
    minutes = (time.time() - start) / 60
    hung = text.count("job hung")
    restarts = text.count("job restarting")
    suspect = text.count("job suspect")
    longest = max((s for _, s in stops), default=0.0)
    lines = [
        "# bench/hang/silent_soak: native ranks computing in silence under the hang watch",
        "",
        f"Machine: {machine()}.",
        f"Command: `bench/hang/silent_soak.py --minutes {args.minutes:g}`: 2 local pods, a C loop",
        "per rank (no output, no Python: the diagnosis attaches gdb), `--hang-timeout 10s`; each",
        "rank's /proc state sampled every 20 ms.",
        "",
        "| minutes | `job hung` | restarts | suspect periods | rank-state samples | stopped samples | stops seen | longest stop |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {minutes:.1f} | {hung} | {restarts} | {suspect} | {samples} | {stopped} | {len(stops)} "
        f"| {longest * 1000:.0f} ms |",
        "",
        "A stop is gdb's attach for the native stack (one bounded, timed attach per rank per",
        "diagnosis); the watch masks the state it caused (node_agent: `diagnosing_until`).",
    ]
    path = os.path.join(ROOT, "bench", "results", "hang-silent-soak.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"(head output kept in {out_path})")


if __name__ == "__main__":
    main()
