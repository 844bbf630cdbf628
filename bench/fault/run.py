#!/usr/bin/env python3
"""bench/fault: how fast atl notices a lost or hung worker and restarts the job,
whether it always recovers without leaks or lost lines, and whether default
heartbeats ever raise a false alarm.

Phases (all by default):
  crash  ROUNDS random `kill -9` of a worker pod (2 pods x 4 ranks = 8 ranks,
         pod-restart delay 0): crash detection (kill -> `command -> restarting`
         in the head's log), restart latency (kill -> every rank running again),
         recovered rounds, leaked processes and lost log lines at the end.
  hang   ROUNDS `kill -STOP` of a worker pod (default heartbeats: 500 ms, 3 s):
         hang detection (stop -> `stopped answering`); SIGCONT then fences it.
  idle   an idle job with default heartbeats for IDLE seconds: false detections.

Usage: bench/fault/run.py [--rounds 50] [--hang-rounds 10] [--idle 600]
                          [--phases crash,hang,idle] [--out bench/results/fault.md]
"""
import argparse
import datetime
import glob
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

LINES = 200  # each rank prints this many numbered lines per attempt
RANKS_PER_POD = 4
PODS = 2
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\]")


def log_time(line):
    m = STAMP.match(line)
    if not m:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()


def first_after(path, needle, after, timeout):
    """Time (from the head's log stamps) of the first line with `needle` stamped after `after`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path, errors="replace") as f:
            for line in f:
                if needle in line:
                    t = log_time(line)
                    if t is not None and t >= after - 0.002:
                        return t
        time.sleep(0.02)
    return None






class Job:
    def __init__(self, tmp, extra, entrypoint):
        self.tmp = tmp
        self.job_id = "jo-bench" + "".join(random.choice("abcdefghij") for _ in range(8))
        self.tag = f"ATL_BENCH_TAG={self.job_id}"
        self.log = os.path.join(tmp, "head.log")
        env = dict(os.environ, ATL_BENCH_TAG=self.job_id)
        cmd = [common.binary("headnode"), "--port", "0", "--job-id", self.job_id,
               "--state-dir", os.path.join(tmp, "state")] + extra + ["--", entrypoint]
        self.out = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, env=env)

    def wait_line(self, needle, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.log, errors="replace") as f:
                if needle in f.read():
                    return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.out.close()


def stamp(tmp):
    """Shell that records when a rank of an attempt started (written whole, then renamed)."""
    name = f"{tmp}/start.$RANK.$ATL_RESTART_COUNT"
    return f"date +%s.%N > {name}.part && mv {name}.part {name}"


def starts_of(tmp, restart):
    return [float(open(p).read()) for p in glob.glob(os.path.join(tmp, f"start.*.{restart}"))]


def wait_for_starts(tmp, restart, count, timeout=60):
    """Whether `count` ranks of restart `restart` started within the timeout."""
    deadline = time.time() + timeout
    while len(starts_of(tmp, restart)) < count and time.time() < deadline:
        time.sleep(0.01)
    return len(starts_of(tmp, restart)) >= count


def crash_phase(rounds):
    with tempfile.TemporaryDirectory() as tmp:
        entry = (f"{stamp(tmp)}; "
                 f"for i in $(seq 1 {LINES}); do echo line $i; done; exec sleep 3600")
        job = Job(tmp, ["--workers", str(PODS), "--nproc-per-node", str(RANKS_PER_POD),
                        "--local-workers", str(PODS), "--pod-restart-delay", "0s",
                        "--max-restarts", str(rounds + 1), "--grace", "2s"], entry)
        detect, restart, recovered = [], [], 0
        try:
            for k in range(rounds + 1):
                # Attempt k is fully up and has written all its lines.
                if not wait_for_starts(tmp, k, PODS * RANKS_PER_POD):
                    print(f"round {k}: attempt did not come up", flush=True)
                    break
                if k > 0:
                    recovered += 1
                    restart.append(max(starts_of(tmp, k)) - killed_at)
                logs = os.path.join(tmp, "state", "logs", f"attempt-{k + 1}")
                deadline = time.time() + 30
                while time.time() < deadline and not all(
                        os.path.exists(f"{logs}/rank-{r}.log") and
                        f"line {LINES}\n" in open(f"{logs}/rank-{r}.log").read()
                        for r in range(PODS * RANKS_PER_POD)):
                    time.sleep(0.01)
                if k == rounds:
                    break
                pid = common.workernode_pid(job.job_id, random.randrange(PODS))
                killed_at = time.time()
                os.kill(pid, signal.SIGKILL)
                t = first_after(job.log, "command -> restarting", killed_at, 30)
                if t is None:
                    print(f"round {k + 1}: no restart seen", flush=True)
                    break
                detect.append(t - killed_at)
                print(f"round {k + 1}: detected {detect[-1]*1000:.0f} ms", flush=True)
        finally:
            job.stop()
        # Every finished attempt kept every line of every rank.
        lost = 0
        for k in range(1, recovered + 1):
            for r in range(PODS * RANKS_PER_POD):
                path = os.path.join(tmp, "state", "logs", f"attempt-{k}", f"rank-{r}.log")
                got = open(path).read().count("\n") if os.path.exists(path) else 0
                lost += max(0, LINES - got)
        time.sleep(2)
        leaked = len(common.tagged(job.tag))
        return detect, restart, recovered, lost, leaked


def hang_phase(rounds):
    with tempfile.TemporaryDirectory() as tmp:
        entry = f"{stamp(tmp)}; exec sleep 3600"
        job = Job(tmp, ["--workers", str(PODS), "--local-workers", str(PODS),
                        "--pod-restart-delay", "0s", "--max-restarts", str(rounds + 1)], entry)
        detect = []
        try:
            for k in range(rounds):
                ok = wait_for_starts(tmp, k, PODS)
                pid = common.workernode_pid(job.job_id, random.randrange(PODS))
                if not ok or pid is None:
                    print(f"hang round {k + 1}: the attempt did not come up", flush=True)
                    break
                stopped_at = time.time()
                os.kill(pid, signal.SIGSTOP)
                t = first_after(job.log, "stopped answering", stopped_at, 30)
                os.kill(pid, signal.SIGCONT)
                if t is None:
                    print(f"hang round {k + 1}: not detected", flush=True)
                    break
                detect.append(t - stopped_at)
                print(f"hang round {k + 1}: detected {detect[-1]*1000:.0f} ms", flush=True)
        finally:
            job.stop()
        return detect


def idle_phase(seconds):
    with tempfile.TemporaryDirectory() as tmp:
        job = Job(tmp, ["--workers", "4", "--local-workers", "4"], f"sleep {seconds}")
        job.proc.wait(timeout=seconds + 120)
        job.out.close()
        text = open(job.log, errors="replace").read()
        false_alarms = text.count("stopped answering") + text.count("lost the head")
        return job.proc.returncode, false_alarms


def ms(xs):
    return f"{common.median(xs)*1000:.0f}" if xs else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--hang-rounds", type=int, default=10)
    ap.add_argument("--idle", type=int, default=600)
    ap.add_argument("--phases", default="crash,hang,idle")
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "fault.md"))
    args = ap.parse_args()
    phases = args.phases.split(",")
    lines = [
        "# bench/fault: detection, restart and recovery",
        "",
        f"Machine: {common.machine()}.",
        f"Command: `bench/fault/run.py --rounds {args.rounds} --hang-rounds {args.hang_rounds} "
        f"--idle {args.idle} --phases {args.phases}`. Times from the moment the bench sends "
        "the signal to the head's log line (its millisecond stamp) or to the ranks' own "
        "start stamps; medians.",
        "",
        "| measure | result | target |",
        "|---|---:|---|",
    ]
    if "crash" in phases:
        detect, restart, recovered, lost, leaked = crash_phase(args.rounds)
        lines += [
            f"| crash detection (kill -9 -> restarting), median of {len(detect)} | "
            f"{ms(detect)} ms (max {max(detect)*1000:.0f}) | <= 100 ms |",
            f"| restart latency (kill -9 -> all 8 ranks running again, pod-restart delay 0), "
            f"median of {len(restart)} | {ms(restart)} ms (max {max(restart)*1000:.0f}) | <= 1 s |",
            f"| random-kill rounds recovered | {recovered}/{args.rounds} | all |",
            f"| leaked processes after the job | {leaked} | 0 |",
            f"| lost log lines of finished attempts ({LINES} per rank per attempt) | {lost} | 0 |",
        ]
    if "hang" in phases:
        hang = hang_phase(args.hang_rounds)
        lines.append(
            f"| hang detection (SIGSTOP -> stopped answering, timeout 3 s), median of {len(hang)} "
            f"| {ms(hang)} ms (max {max(hang)*1000:.0f}) | <= 3500 ms |")
    if "idle" in phases:
        code, alarms = idle_phase(args.idle)
        lines.append(f"| false detections, {args.idle} s idle job, 4 pods, default heartbeats "
                     f"(exit {code}) | {alarms} | 0 |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
