#!/usr/bin/env python3
"""bench/chaos/checkpoints: does every rank's checkpoint on SIGTERM complete?

Each rank is shaped as torchelastic's: its SIGTERM handler raises, and the
checkpoint is taken in `except` (0.5 s of work, then a file), with two
forked DataLoader-style workers beside it. One job per entrypoint form:
  one-word  `-- "python3 rank.py DIR"`      (a shell wrapper stays)
  argv      `-- python3 rank.py DIR`
  exec      `-- "exec python3 rank.py DIR"`
2 active pods x 2 ranks and a spare, --grace 10s. Stops come one after
the other, each once every rank of the attempt runs, alternating:
  stop      atlctl stop, then atlctl recover
  evict     SIGTERM to an active pod's workernode (Kubernetes deleting,
            evicting or draining it): the job restarts on the spare
and the job's end (SIGTERM to the head) stops the last attempt. Measured:
ranks started, checkpoints completed (every started rank must have one: a
second SIGTERM inside the handler, or a grace cut short, loses it), the
job's restarts, and failures (an eviction must never fail the job).

Usage: bench/chaos/checkpoints.py [--stops 18] [--out bench/results/checkpoints.md]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

RANKS = 4
RANK = r'''import os, signal, sys, time, uuid
class SignalException(Exception): pass
def on_term(*_): raise SignalException()
signal.signal(signal.SIGTERM, on_term)
d, me = sys.argv[1], uuid.uuid4().hex
try:
    for _ in range(2):  # DataLoader-style workers, forked
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            while True: time.sleep(1)
    open(os.path.join(d, "started." + me), "w").close()
    while True: time.sleep(1)
except SignalException:
    time.sleep(0.5)  # the checkpoint's work
    with open(os.path.join(d, "ckpt." + me), "w") as f:
        f.write(os.environ["RANK"])
    sys.exit(0)
'''

FORMS = {
    "one-word": lambda script, d: ["python3 %s %s" % (script, d)],
    "argv": lambda script, d: ["python3", script, d],
    "exec": lambda script, d: ["exec python3 %s %s" % (script, d)],
}


def count(d, prefix):
    return sum(1 for f in os.listdir(d) if f.startswith(prefix))


def wait_started(d, n, head, timeout=120):
    deadline = time.time() + timeout
    while count(d, "started.") < n:
        if time.time() > deadline or head.poll() is not None:
            raise SystemExit("ranks did not all start (%d of %d): see %s"
                             % (count(d, "started."), n, d))
        time.sleep(0.05)


def atlctl(address, *args):
    r = subprocess.run([common.binary("atlctl"), "--address", address, *args],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit("atlctl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def run_form(form, stops, rng):
    d = tempfile.mkdtemp(prefix="atl-ckpt-")
    script = os.path.join(d, "rank.py")
    open(script, "w").write(RANK)
    job_id = "jo-ckpt-" + form.replace("-", "")
    out_path = os.path.join(d, "head.out")
    head = subprocess.Popen(
        [common.binary("headnode"), "--port", "0", "--job-id", job_id, "--state-dir",
         os.path.join(d, "state"), "--workers", "2", "--spare-workers", "1", "--local-workers",
         "3", "--nproc-per-node", "2", "--grace", "10s", "--max-restarts", "100", "--",
         *FORMS[form](script, d)],
        stdout=open(out_path, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    address = common.wait_line(out_path, "listening on ").split()[2]
    started = RANKS
    wait_started(d, started, head)
    kinds = {"stop": 0, "evict": 0}
    for k in range(stops):
        kind = "evict" if k % 2 else "stop"
        kinds[kind] += 1
        if kind == "stop":
            atlctl(address, "stop")
            atlctl(address, "recover")
        else:
            info = json.loads(atlctl(address, "status", "--json"))
            active = [i for i, p in enumerate(info["pods"]) if p["role"] == "active"]
            pid = common.workernode_pid(job_id, rng.choice(active))
            if pid:
                os.kill(pid, signal.SIGTERM)
        started += RANKS
        wait_started(d, started, head)
        time.sleep(0.3)  # the ranks' handlers are in place
    info = json.loads(atlctl(address, "status", "--json"))
    head.send_signal(signal.SIGTERM)  # the job's end stops the last attempt
    code = head.wait(120)
    out = open(out_path).read()
    return {
        "form": form,
        "stops": kinds["stop"],
        "evictions": kinds["evict"],
        "started": count(d, "started."),
        "checkpoints": count(d, "ckpt."),
        "restarts": info["restarts"],
        # The end is a cancel (SIGTERM to the head); any other failure counts.
        "failed": any(line.startswith("job failed:") and "cancelled" not in line
                      for line in out.splitlines()),
        "exit": code,
        "dir": d,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stops", type=int, default=18, help="stop events per form")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results",
                                                  "checkpoints.md"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rows = [run_form(form, args.stops, rng) for form in FORMS]
    lines = [
        "# Checkpoints on SIGTERM (bench/chaos/checkpoints.py)",
        "",
        "Machine: " + common.machine() + ".",
        "",
        "torchelastic-style ranks (the SIGTERM handler raises; the checkpoint, 0.5 s, "
        "is taken in `except`; two forked loader workers beside), 2 pods x 2 ranks and a "
        "spare, --grace 10s. Stop events alternate `atlctl stop` + `recover` and SIGTERM to "
        "an active pod's workernode (an eviction); the job's end stops the last attempt. "
        "Every started rank must have completed its checkpoint.",
        "",
        "| form | stops | evictions | ranks started | checkpoints | restarts | job failed |",
        "|---|---|---|---|---|---|---|",
    ]
    total_started = total_ckpt = 0
    for r in rows:
        total_started += r["started"]
        total_ckpt += r["checkpoints"]
        lines.append("| %s | %d | %d | %d | %d | %d | %s |" % (
            r["form"], r["stops"], r["evictions"], r["started"], r["checkpoints"],
            r["restarts"], "yes" if r["failed"] else "no"))
    lines += ["", "Checkpoints completed: %d of %d (%.1f%%) over %d stop events." % (
        total_ckpt, total_started, 100.0 * total_ckpt / max(1, total_started),
        sum(r["stops"] + r["evictions"] + 1 for r in rows)), ""]
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
