#!/usr/bin/env python3
"""Task starts over a long driver session: does the 20,000th start cost what
the first did? A driver-mode job on 64 simulated pods (workernode --simulate
--fake-ranks: the supervisor's path, no fork), a Python driver (atl.run) that
starts 20,000 tasks one after the other, each `true`, and waits for each.
Before the TaskBook (issue 24) choosing a pod walked every task ever started:
0.8 ms -> 24.5 ms. Writes bench/results/tasks.md.

    python3 bench/tasks/run.py [--tasks 20000] [--pods 64]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402


def driver_side(address, tls, tasks):
    sys.path.insert(0, os.path.join(common.ROOT, "python"))
    import atl
    atl.init(address, tls)
    times = []
    for _ in range(tasks):
        t0 = time.perf_counter()
        task = atl.run("true")
        times.append((time.perf_counter() - t0) * 1000)
        task.wait(timeout=60)
    window = max(1, min(200, tasks // 10))
    first = common.median(times[:window])
    last = common.median(times[-window:])
    print(f"RESULT {first:.3f} {last:.3f} {window}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--pods", type=int, default=64)
    ap.add_argument("--side", nargs=2)
    args = ap.parse_args()
    if args.side:
        driver_side(args.side[0], args.side[1], args.tasks)
        return
    work = tempfile.mkdtemp(prefix="atl-bench-tasks-")
    state = os.path.join(work, "state")
    job_id = "jo-benchtasks"
    head_out = open(os.path.join(work, "head.out"), "w")
    head = subprocess.Popen(
        [common.binary("headnode"), "--mode", "driver", "--workers", str(args.pods),
         "--job-id", job_id, "--port", "0", "--bind", "127.0.0.1", "--state-dir", state,
         "--dashboard-port", "off", "--", "exec sleep 3600"],
        stdout=head_out, stderr=subprocess.STDOUT, start_new_session=True)
    worker = None
    try:
        address = None
        deadline = time.time() + 30
        while time.time() < deadline and not address:
            for line in open(head_out.name).read().splitlines():
                if line.startswith("listening on "):
                    address = line.split()[-1]
            time.sleep(0.05)
        if not address:
            raise SystemExit("head did not start:\n" + open(head_out.name).read())
        worker = subprocess.Popen(
            [common.binary("workernode"), "--head", address, "--name", f"{job_id}-worker-0",
             "--simulate", str(args.pods), "--fake-ranks", "--node", "sim",
             "--tls-dir", os.path.join(state, "tls")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 120
        while "initializing -> command" not in open(head_out.name).read():
            if time.time() > deadline:
                raise SystemExit("job did not start:\n" + open(head_out.name).read()[-3000:])
            time.sleep(0.1)
        t0 = time.time()
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--tasks",
                              str(args.tasks), "--side", address, os.path.join(state, "tls")],
                             capture_output=True, text=True, timeout=3600)
        took = time.time() - t0
        result = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
        if out.returncode != 0 or not result:
            raise SystemExit(f"driver failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        first, last, window = result[0].split()[1:]
        ratio = float(last) / float(first)
        lines = [
            "# Task starts over a long driver session",
            "",
            f"Machine: {common.machine()}.",
            f"`python3 bench/tasks/run.py --tasks {args.tasks} --pods {args.pods}`: a driver-mode "
            f"job on {args.pods} simulated pods (fake ranks), `atl.run('true')` {args.tasks} "
            "times in a row, each waited for; the time of `atl.run` (until the task started).",
            "",
            "| | median start (ms) |",
            "|---|---|",
            f"| first {window} tasks | {float(first):.2f} |",
            f"| last {window} tasks (up to #{args.tasks}) | {float(last):.2f} |",
            f"| last / first | {ratio:.2f}x |",
            "",
            f"All {args.tasks} tasks in {took:.0f} s. Before the TaskBook (issue 24) the supervisor "
            "walked every task ever started to pick a pod: 0.8 ms -> 24.5 ms over 20,000 tasks.",
        ]
        os.makedirs(os.path.join(common.ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(common.ROOT, "bench", "results", "tasks.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
    finally:
        for p in (worker, head):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
