#!/usr/bin/env python3
"""bench/hang: the hang watch and the GPU fault watch, measured.

  scale     the head's side of a diagnosis at 8, 64 and 8,000 ranks (1, 8 and
            1,000 simulated pods x 8: workernode --simulate --fake-ranks, each
            rank's stack canned from $ATL_FAKE_STACKS, rank 5 standing apart):
            the job silent for --hang-timeout, then the time from "suspect"
            to the first look's grouping, to the verdict (two looks a second
            apart), and the head's CPU seconds over it.
  faults    a real torch DDP job (gloo on CPU, 3 workers + 1 spare, bench/hang/
            ddp_job.py) under atl, --hang-timeout T: a healthy period first
            (false hangs counted), then rounds of injected faults on rank 1 --
            (a) SIGSTOP, (b) spinning in a Python loop inside its step, (c)
            asleep inside its step, (d) its pod's GPU reported lost (Xid 79 by
            a fake NVML) -- each: detected? the culprit alone named? how long
            after the timeout (a-c: after its last line + T; d: after the
            Xid), and the time lost from the fault to every rank's first step
            of the next attempt. The taint is removed (the node "repaired")
            and a deleted pod started again before the next round.
  torchrun  the same job under `python3 -m torch.distributed.run
            --max_restarts 3` (Debian's torch 1.13 needs --redirects 1 --tee 1
            on Python 3.11), faults (a)-(c) injected the same way: does it
            restart within --torchrun-wait seconds?

  goodput   a job with 3 injected faults (30 s of training around each):
            atl's goodput figures against a hand count from the job's own
            files and the head's stamped lines.

Writes bench/results/hang.md.
Usage: bench/hang/run.py [--phases scale,faults,torchrun] [--sizes 1,8,1000]
                         [--rounds 20] [--healthy 600] [--timeout 30]
                         [--loader-workers 0,2] [--kinds stop,spin,...]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"  # --python
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scale"))
import common  # noqa: E402

KINDS = ["stop", "spin", "sleep", "lock", "fifo", "pause", "subprocess", "skip", "loader", "gpu"]
KIND_NAMES = {"stop": "(a) rank stopped (SIGSTOP)", "spin": "(b) rank spinning in its step",
              "sleep": "(c) rank asleep in its step", "lock": "(e) a threading.Lock deadlock",
              "fifo": "(f) a blocking FIFO read", "pause": "(g) libc pause() via ctypes",
              "subprocess": "(h) stuck in subprocess.run", "skip": "(i) a skipped all_reduce",
              "loader": "(j) its DataLoader workers stuck", "gpu": "(d) its GPU lost (Xid 79)"}
# Faults that leave the rank working: judged at --hang-timeout, not the learned one.
BUSY = {"spin"}
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] ")


def stamp_of(line):
    m = STAMP.match(line)
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp() if m else None


def py_spy_path():
    for d in ("build/ray-venv/bin", "build/py-spy-venv/bin"):
        p = os.path.join(common.ROOT, d)
        if os.access(os.path.join(p, "py-spy"), os.X_OK):
            return p
    return None


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


# --- scale -----------------------------------------------------------------

def scale_round(tmp, pods, timeout_s):
    import run as scale_run  # bench/scale/run.py's Job
    stacks = os.path.join(tmp, "stacks-%d" % pods)
    os.makedirs(stacks)
    data = os.path.join(common.ROOT, "tests", "unit", "data", "stacks")
    shutil.copy(os.path.join(data, "py-spy-ddp-rank0-in-backward.txt"),
                os.path.join(stacks, "default.txt"))
    shutil.copy(os.path.join(data, "py-spy-ddp-rank2-asleep-in-step.txt"),
                os.path.join(stacks, "rank-5.txt"))
    job = scale_run.Job(tmp, pods, 0, tag="hang",
                        extra=("--hang-timeout", "%ds" % timeout_s, "--on-hang", "report"))
    job.env["ATL_FAKE_STACKS"] = stacks
    try:
        t0 = time.time()
        job.start_workers()
        job.wait_all_running(timeout=900)
        registered = time.time() - t0
        marks, cpu = {}, {}
        deadline = time.time() + timeout_s + 120
        keys = {"suspect": "job suspect:", "looked": "stacks of ", "hung": "job hung:"}
        while time.time() < deadline and "hung" not in marks:
            c = job.head_cpu_s()
            for line in open(job.out.name):
                for k, text in keys.items():
                    if k not in marks and text in line and stamp_of(line):
                        marks[k] = stamp_of(line)
                        cpu[k] = c
                        if k == "hung":
                            marks["hung_line"] = line.split("] ", 3)[-1].strip()
            time.sleep(0.02)
        if "hung" not in marks:
            raise SystemExit("no verdict at %d pods: see %s" % (pods, job.out.name))
        return {"pods": pods, "ranks": pods * scale_run.RANKS_PER_POD,
                "registered_s": registered,
                "first_look_s": marks["looked"] - marks["suspect"],
                "verdict_s": marks["hung"] - marks["suspect"],
                "cpu_s": cpu["hung"] - cpu["suspect"],
                "rss_mib": job.head_rss_mib(), "line": marks["hung_line"]}
    finally:
        job.stop()


def culprits_of(reason):
    """The ranks a verdict names: the stacks' form ("job hung: rank 1 in f
    (x.py) while 2 ranks are in ...") or the flight records' ("job hung: ranks
    0,2 wait in all_reduce #46 on the default group; rank 1 never entered it;
    ...", "job hung: rank 1 entered broadcast #11 ... where ranks 0,2 ...")."""
    never = re.findall(r"\branks? ([0-9,]+) never entered it", reason)
    if never:
        return sorted(set(",".join(never).split(",")))
    return re.findall(r"\branks? ([0-9,]+)", reason.split(" while ")[0].split(" where ")[0])


# --- the DDP job under atl ---------------------------------------------------

class AtlJob:
    def __init__(self, tmp, timeout_s, master_port, loader_workers=0, tag="atl-ddp",
                 wrapper="exec %s " % PYTHON, nproc=1):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(self.dir)
        self.job_id = "jo-hangbench"
        self.env = dict(os.environ, HANG_BENCH_DIR=self.dir,
                        HANG_BENCH_WORKERS=str(loader_workers),
                        ATL_NVML_LIBRARY=os.path.join(common.BIN, "..", "lib",
                                                      "libatl_fake_nvml.so"))
        spy = py_spy_path()
        self.py_spy = spy is not None
        if spy:
            self.env["PATH"] = self.env.get("PATH", "/usr/bin:/bin") + ":" + spy
        self.out = open(os.path.join(self.dir, "head.out"), "w")
        self.head = subprocess.Popen(
            [common.binary("headnode"), "--job-id", self.job_id, "--workers", "3",
             "--spare-workers", "1", "--port", "0", "--state-dir", os.path.join(self.dir, "st"),
             "--dashboard-port", "off", "--max-restarts", "1000", "--master-port",
             str(master_port), "--nproc-per-node", str(nproc)] + (["--hang-timeout", "%ds" % timeout_s] if timeout_s else []) +
            ["--", wrapper + os.path.join(HERE, "ddp_job.py")],
            stdout=self.out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.world = 3 * nproc
        self.address = self.wait_line("listening on ").split()[-1]
        self.env["ATL_ADDRESS"] = self.address
        self.env["ATL_TLS_DIR"] = os.path.join(self.dir, "st", "tls")
        self.workers = {}
        for i in range(4):
            self.start_worker(i)

    def wait_line(self, prefix, timeout=60):
        return common.wait_line(self.out.name, prefix, timeout)

    def start_worker(self, i):
        with open(os.path.join(self.dir, "nvml-%d" % i), "w") as f:
            f.write("gpus 1\n")  # a fresh pod: nothing reported yet
        env = dict(self.env, ATL_FAKE_NVML=os.path.join(self.dir, "nvml-%d" % i))
        log = open(os.path.join(self.dir, "worker-%d.out" % i), "a")
        self.workers[i] = subprocess.Popen(
            [common.binary("workernode"), "--head", self.address, "--name",
             "%s-worker-%d" % (self.job_id, i), "--node", "bench-node-%d" % i,
             "--tls-dir", os.path.join(self.dir, "st", "tls")],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def atlctl(self, *args):
        return subprocess.run([common.binary("atlctl"), *args], env=self.env,
                              capture_output=True, text=True, timeout=120)

    def status(self):
        r = self.atlctl("status", "--json")
        return json.loads(r.stdout) if r.returncode == 0 else None

    def head_lines(self):
        return open(self.out.name).read().splitlines()

    def wait_stepping(self, attempt, timeout=300):
        """Every rank's first step of `attempt` (0-based, ATL_RESTART_COUNT): its time."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            stamps = [read(os.path.join(self.dir, "step0-%d-%d" % (attempt, r)))
                      for r in range(self.world)]
            if all(stamps):
                return max(float(s) for s in stamps)
            time.sleep(0.05)
        return None

    def last_progress(self, attempt):
        stamps = [read(os.path.join(self.dir, "last-%d-%d" % (attempt, r)))
                  for r in range(self.world)]
        return max(float(s) for s in stamps if s)

    def stop(self):
        for p in [self.head] + list(self.workers.values()):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in [self.head] + list(self.workers.values()):
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def inject(job_dir, kind, attempt, pid_file, facts_file):
    if kind == "stop":
        os.kill(int(read(pid_file)), signal.SIGSTOP)
    elif kind == "gpu":
        pass
    else:
        with open(os.path.join(job_dir, "fault-%d" % attempt), "w") as f:
            f.write(kind)
    if kind == "gpu":
        with open(facts_file, "a") as f:
            f.write("xid 0 79\n")
    return time.time()


def faults(tmp, rounds, healthy_s, timeout_s, loader_workers, kinds, tag, wrapper, nproc=1,
           settle_s=10.0):
    port = 29500 + (os.getpid() + 7 * loader_workers + 13 * nproc) % 1000
    job = AtlJob(tmp, timeout_s, port, loader_workers, tag, wrapper, nproc)
    results, false_hangs = [], []
    try:
        attempt = 0
        if job.wait_stepping(attempt) is None:
            raise SystemExit("the DDP job never trained: see " + job.out.name)
        # Healthy: no fault for healthy_s; any restart or hang line is false.
        t_end = time.time() + healthy_s
        while time.time() < t_end:
            time.sleep(1)
        healthy_lines = [ln for ln in job.head_lines()
                         if "job hung" in ln or "job restarting" in ln or "job suspect" in ln]
        false_hangs += healthy_lines
        for n in range(rounds * len(kinds)):
            kind = kinds[n % len(kinds)]
            st = job.status()
            pod = next(r["pod"] for r in st["ranks"] if r.get("rank") == 1)
            index = int(pod.rsplit("-", 1)[1])
            lines_before = len(job.head_lines())
            # Steps of this attempt first: a job's cadence is learned from its
            # own steps, and a fault in the first seconds after a (re)start
            # meets the configured timeout instead.
            time.sleep(settle_s)
            last = job.last_progress(attempt)
            t0 = inject(job.dir, kind, attempt, os.path.join(job.dir, "pid-%d-1" % attempt),
                        os.path.join(job.dir, "nvml-%d" % index))
            stepped = job.wait_stepping(attempt + 1, timeout=(timeout_s or 300) + 180)
            new = job.head_lines()[lines_before:]
            restart = next((ln for ln in new if "job restarting" in ln and stamp_of(ln)), None)
            r = {"kind": kind, "detected": restart is not None and stepped is not None}
            if restart:
                reason = restart.split("): ", 1)[-1]
                if kind == "gpu":
                    r["named"] = pod in reason and "Xid 79" in reason
                    r["latency_s"] = stamp_of(restart) - t0
                else:
                    r["named"] = culprits_of(reason) == ["1"]
                    if kind == "loader":  # the worker itself, not only its rank
                        r["named"] = r["named"] and "DataLoader worker" in reason
                    r["latency_s"] = stamp_of(restart) - last
                r["detect_s"] = stamp_of(restart) - t0
                r["reason"] = reason
            if stepped:
                r["lost_s"] = stepped - t0
            results.append(r)
            print("round %d %s: %s" % (n, kind, r), flush=True)
            attempt += 1
            # The node "repaired": the taint off; a deleted pod comes back.
            for t in (job.status() or {}).get("taints", []):
                job.atlctl("taint", "-a", "remove", "-n", t["node"])
            for i, p in list(job.workers.items()):
                if p.poll() is not None:
                    job.start_worker(i)
            if stepped is None:
                raise SystemExit("the job did not train again after %s: see %s" % (
                    kind, job.out.name))
        # A restart or hang no injection explains is a false one.
        restarts = [ln for ln in job.head_lines() if "job restarting" in ln and stamp_of(ln)]
        extra = len(restarts) - sum(1 for r in results if r["detected"])
        return results, false_hangs, max(extra, 0), job.py_spy
    finally:
        job.stop()


# --- goodput against a hand count ----------------------------------------------

def goodput(tmp, train_s, kinds=("sleep", "loader", "pause")):
    """A job (loader workers, learned timeouts) trains train_s, then each fault
    in turn, train_s after each restart: atl's goodput figures against the
    same quantities counted by hand from the job's own files (first step,
    last progress per attempt) and the head's stamped lines (each verdict,
    each launch)."""
    port = 29500 + (os.getpid() + 31) % 1000
    job = AtlJob(tmp, 0, port, 2, "atl-goodput", "cd %s && %s " % (HERE, PYTHON))
    try:
        if job.wait_stepping(0) is None:
            raise SystemExit("the goodput job never trained: see " + job.out.name)
        for attempt, kind in enumerate(kinds):
            time.sleep(train_s)
            st = job.status()
            pod = next(r["pod"] for r in st["ranks"] if r.get("rank") == 1)
            inject(job.dir, kind, attempt, os.path.join(job.dir, "pid-%d-1" % attempt),
                   os.path.join(job.dir, "nvml-%s" % pod.rsplit("-", 1)[1]))
            if job.wait_stepping(attempt + 1, timeout=300) is None:
                raise SystemExit("no restart after %s: see %s" % (kind, job.out.name))
            for t in (job.status() or {}).get("taints", []):
                job.atlctl("taint", "-a", "remove", "-n", t["node"])
        time.sleep(train_s)
        g = job.status()["goodput"]
        lines = job.head_lines()
        launches = [stamp_of(ln) for ln in lines if "launching " in ln and "(attempt " in ln]
        verdicts = [stamp_of(ln) for ln in lines if "job restarting" in ln and stamp_of(ln)]

        def marks(name, a):
            return [float(x) for x in (read(os.path.join(job.dir, "%s-%d-%d" % (name, a, r)))
                                       for r in range(3)) if x]
        n = len(kinds)
        hand = {"productive_s": 0.0, "detection_s": 0.0, "restart_s": 0.0, "rewarm_s": 0.0}
        for a in range(n + 1):
            hand["productive_s"] += max(marks("last", a)) - min(marks("step0", a))
        for k in range(n):
            hand["detection_s"] += verdicts[k] - max(marks("last", k))
            hand["restart_s"] += launches[k + 1] - verdicts[k]
            hand["rewarm_s"] += min(marks("step0", k + 1)) - launches[k + 1]
        hand["elapsed_s"] = time.time() - launches[0]
        hand["ratio"] = hand["productive_s"] / hand["elapsed_s"]
        return g, hand, list(kinds)
    finally:
        job.stop()


# --- the same job under torchrun ----------------------------------------------

def torchrun(tmp, wait_s, kinds, loader_workers):
    out = {}
    for kind in kinds:
        d = os.path.join(tmp, "torchrun-" + kind)
        os.makedirs(d)
        env = dict(os.environ, HANG_BENCH_DIR=d, HANG_BENCH_WORKERS=str(loader_workers))
        log = open(os.path.join(d, "torchrun.out"), "w")
        p = subprocess.Popen(
            [PYTHON, "-m", "torch.distributed.run", "--redirects", "1", "--tee",
             "1", "--nproc_per_node", "3", "--max_restarts", "3", "--master_port",
             str(29400 + os.getpid() % 90), os.path.join(HERE, "ddp_job.py")],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            deadline = time.time() + 300
            while time.time() < deadline and not all(
                    read(os.path.join(d, "step0-0-%d" % r)) for r in range(3)):
                time.sleep(0.05)
            time.sleep(1.0)
            t0 = inject(d, kind, 0, os.path.join(d, "pid-0-1"), None)
            restarted = None
            while time.time() < t0 + wait_s:
                if read(os.path.join(d, "pid-1-0")):
                    restarted = time.time() - t0
                    break
                time.sleep(0.2)
            out[kind] = restarted
            print("torchrun %s: %s" % (kind, restarted), flush=True)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return out


# --- report ----------------------------------------------------------------

def fmt(x, unit="s", digits=1):
    return "-" if x is None else ("%." + str(digits) + "f %s") % (x, unit)


def median(xs):
    xs = [x for x in xs if x is not None]
    return common.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", default="scale,faults,goodput,torchrun")
    ap.add_argument("--sizes", default="1,8,1000")
    ap.add_argument("--rounds", type=int, default=20, help="faults of each kind")
    ap.add_argument("--healthy", type=int, default=600, help="seconds of healthy training")
    ap.add_argument("--timeout", type=int, default=30,
                    help="--hang-timeout of the DDP job (s); 0: none given")
    ap.add_argument("--loader-workers", default="0,2",
                    help="DataLoader workers per rank, one job each")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--nproc", type=int, default=1, help="ranks per pod in the faults phase")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds of training after each (re)start before the next fault")
    ap.add_argument("--scale-timeout", type=int, default=10)
    ap.add_argument("--torchrun-wait", type=int, default=120)
    ap.add_argument("--goodput-train", type=int, default=30,
                    help="goodput phase: seconds of training around each fault")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the ranks' interpreter (a venv with a torch of 2.5 or later: the "
                         "flight recorder's verdicts)")
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "hang.md"))
    args = ap.parse_args()
    global PYTHON
    PYTHON = args.python
    phases = args.phases.split(",")
    tmp = tempfile.mkdtemp(prefix="atl-hang-bench-")
    lines = ["# bench/hang: hangs and GPU faults found, named and recovered", "",
             "Machine: %s." % common.machine(),
             "Command: `bench/hang/run.py %s`." % " ".join(sys.argv[1:])]
    torch_version = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    lines += ["Ranks' Python: `%s`, torch %s (the flight recorder from 2.5 on)." % (
        PYTHON, torch_version or "absent"), ""]
    if "scale" in phases:
        rows = [scale_round(tmp, int(s), args.scale_timeout) for s in args.sizes.split(",")]
        lines += ["## Diagnosis at scale (simulated ranks, canned stacks; `--hang-timeout %ds`)"
                  % args.scale_timeout, "",
                  "| ranks | pods | suspect -> first look grouped | suspect -> verdict (two looks) "
                  "| head CPU over it | head RSS | verdict |", "|---:|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            lines.append("| %d | %d | %s | %s | %s | %.0f MiB | %s |" % (
                r["ranks"], r["pods"], fmt(r["first_look_s"], "s", 2), fmt(r["verdict_s"], "s", 2),
                fmt(r["cpu_s"], "s", 2), r["rss_mib"], r["line"][:90]))
        lines.append("")
    if "faults" in phases:
        kinds = args.kinds.split(",")
        for workers in [int(w) for w in args.loader_workers.split(",")]:
            # With loader workers the rank runs behind a shell wrapper too.
            wrapper = ("exec %s " % PYTHON if workers == 0 else
                       "cd %s && %s " % (HERE, PYTHON))
            results, false_lines, extra, spy = faults(
                tmp, args.rounds, args.healthy, args.timeout, workers,
                [k for k in kinds if k != "loader" or workers > 0], "atl-ddp-%d" % workers,
                wrapper, args.nproc, args.settle)
            timeout_words = ("`--hang-timeout %ds`" % args.timeout if args.timeout else
                             "no `--hang-timeout` (the default 5 min; idle ranks suspect after "
                             "the timeout learned from the steps)")
            lines += ["## Faults injected into a torch DDP job (3 pods x %d ranks + 1 spare pod, "
                      "gloo on CPU, DataLoader(num_workers=%d)%s, %s, py-spy %s)" % (
                          args.nproc, workers, ", behind `sh -c`" if workers else "",
                          timeout_words,
                          "on PATH" if spy else "absent: gdb stacks"), "",
                      "Healthy training first: %d s, %d hang or suspect lines, %d restarts no "
                      "fault explains over the whole run. Each fault comes %.0f s after every "
                      "rank's first step of its attempt." % (args.healthy, len(false_lines),
                                                             extra, args.settle), "",
                      "| fault | injected | detected | culprit alone named | precision | recall | "
                      "detection after the fault (median, max) | after the job's last progress "
                      "(median, max) | time lost, fault -> every rank training again "
                      "(median, max) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for kind in KINDS:
                rs = [r for r in results if r["kind"] == kind]
                if not rs:
                    continue
                det = [r for r in rs if r["detected"]]
                tp = [r for r in det if r.get("named")]
                dt = [r.get("detect_s") for r in det]
                lat = [r.get("latency_s") for r in det]
                lost = [r.get("lost_s") for r in det]
                precision = len(tp) / len(det) if det else 0
                lines.append("| %s | %d | %d | %d | %.2f | %.2f | %s (%s) | %s (%s) | %s (%s) |" % (
                    KIND_NAMES[kind], len(rs), len(det), len(tp), precision, len(tp) / len(rs),
                    fmt(median(dt), "s", 1), fmt(max(dt) if dt else None, "s", 1),
                    fmt(median(lat), "s", 2), fmt(max(lat) if lat else None, "s", 2),
                    fmt(median(lost)), fmt(max(lost) if lost else None)))
            lines.append("")
            wrong = [r for r in results if r["detected"] and not r.get("named")]
            for r in wrong[:5]:
                lines.append("- misnamed (%s): `%s`" % (r["kind"], r.get("reason", "")))
            examples = {}
            for r in results:
                if r.get("named") and r["kind"] not in examples:
                    examples[r["kind"]] = r.get("reason", "")
            for kind, reason in examples.items():
                lines.append("- %s: `%s`" % (kind, reason))
            for ln in false_lines[:5]:
                lines.append("- during healthy training: `%s`" % ln)
            lines.append("")
    if "goodput" in phases:
        g, hand, kinds = goodput(tmp, args.goodput_train)
        lines += ["## Goodput of a job with %d injected faults (%s), against a hand count"
                  % (len(kinds), ", ".join(kinds)), "",
                  "DataLoader(num_workers=2), no `--hang-timeout`, %d s of training before "
                  "each fault and after the last. Hand count: first step and last progress "
                  "of each attempt from the job's own files, verdicts and launches from the "
                  "head's stamped log lines." % args.goodput_train, "",
                  "| figure | atl (`status --json`) | by hand | difference |",
                  "|---|---:|---:|---:|"]
        for key in ("productive_s", "detection_s", "restart_s", "rewarm_s", "ratio"):
            a, h = g.get(key) or 0.0, hand[key]
            lines.append("| %s | %.3f | %.3f | %.1f %% |" % (
                key, a, h, 100.0 * (a - h) / h if h else 0.0))
        lines.append("")
    if "torchrun" in phases:
        workers = max(int(w) for w in args.loader_workers.split(","))
        tr = torchrun(tmp, args.torchrun_wait, [k for k in args.kinds.split(",") if k != "gpu"],
                      workers)
        lines += ["## The same job under torchrun (`--max_restarts 3`, DataLoader(num_workers=%d))"
                  % workers, "",
                  "| fault | torchrun restarts within %d s |" % args.torchrun_wait, "|---|---|"]
        for kind, t in tr.items():
            lines.append("| %s | %s |" % (KIND_NAMES[kind], "after %.1f s" % t if t else
                                          "no: the job waits (gloo's timeout is 30 min)"))
        lines.append("| %s | not watched (no NVML watch) |" % KIND_NAMES["gpu"])
        lines.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
