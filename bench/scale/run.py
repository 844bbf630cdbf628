#!/usr/bin/env python3
"""bench/scale: one supervisor with 10 to 4,000 simulated worker
pods of 8 ranks each (workernode --simulate --fake-ranks: real node agents,
real TCP+TLS to a real headnode, in-process rank stand-ins; see README
"Scale"). Measures, per size:

  register   pods started -> every rank running (registration, pre-flight,
             placement, launch of 8 per pod)
  status     `atlctl status` wall time, idle and while debug runs fan out
  fan-out    `atlctl run -r all true`: to every rank and back (median of 3)
  restart    `atlctl delete` of one active pod -> every rank running again in
             the next attempt (a spare pod takes its place)
  killed     SIGKILL of one active pod's process -> every rank running again
             in the next attempt (the head sees the connection go; a spare)
  hung       SIGSTOP of one active pod's process (a hung machine, or one
             whose power went: no FIN) -> every rank running again (the
             heartbeat timeout, 3 s, detects it)
  rss        the head's resident memory with every rank running
  idle cpu   the head's CPU over 10 s with every rank running (heartbeats)

Then the workloads that map on Ray 2.60 at the sizes one machine holds
(--ray-sizes; bench/scale/ray_side.py with the Ray venv's python).

Writes bench/results/scale.md and bench/results/scale.svg.
Usage: bench/scale/run.py [--sizes 10,100,300,1000,2000,4000] [--per-process N]
                          [--ray-sizes 10,20] [--ray-python build/ray-venv/bin/python]
"""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

WAIT = "watch"  # how a restart's end is seen (--wait; see Job.restarted)

RANKS_PER_POD = 8


class Job:
    def __init__(self, tmp, pods, per_process, mode="spmd", entrypoint="sleep 100000", tag="",
                 extra=(), echo_to_file=True):
        self.dir = os.path.join(tmp, "%s%s-pods-%d" % (mode, tag, pods))
        os.makedirs(self.dir)
        self.pods, self.job_id = pods, "jo-scale%d" % pods
        # The driver's package and library: this tree's, unless given (a run
        # of another build's binaries needs its own: bench on an older tree).
        self.env = dict(os.environ, ATL_JOB_FILE=os.path.join(self.dir, "job.json"))
        self.env.setdefault("ATL_PYTHON_DIR", os.path.join(common.ROOT, "python"))
        self.out = open(os.path.join(self.dir, "head.out"), "w")
        self.head = subprocess.Popen(
            [common.binary("headnode"), "--job-id", self.job_id, "--mode", mode, "--workers",
             str(pods), "--spare-workers", "3", "--nproc-per-node", str(RANKS_PER_POD), "--port",
             "0", "--state-dir", os.path.join(self.dir, "st"), "--dashboard-port", "off",
             "--ready-timeout", "600s", *extra, "--", entrypoint],
            stdout=self.out if echo_to_file else subprocess.DEVNULL, stderr=subprocess.STDOUT,
            env=self.env, start_new_session=True)
        if echo_to_file:
            self.address = self.wait_line("listening on ").split()[-1]
        else:  # the ranks' lines would fill the file: the address file says where
            address = os.path.join(self.dir, "st", "address")
            deadline = time.time() + 60
            while not (os.path.exists(address) and open(address).read().strip()):
                if time.time() > deadline:
                    raise SystemExit("no address file from the head in " + self.dir)
                time.sleep(0.02)
            self.address = open(address).read().strip()
        self.workers = []
        # Simulated pods per workernode process: at least 100, and at most 8
        # processes (each spins in CAF's TLS handshake loop while it connects:
        # dozens of them would starve the head of the 2 cores they share).
        self.per_process = per_process or max(100, -(-(pods + 1) // 8))

    def wait_line(self, prefix, timeout=60):
        return common.wait_line(self.out.name, prefix, timeout)

    def start_workers(self):
        """Pods 0 and 1 alone in processes of their own (the bench kills
        one and stops the other), pods 2..N+2 in the shared ones (three
        spares: for a delete, a kill and a hang)."""
        total = self.pods + 3
        self.victim = self.start_process(0, 1)
        self.hung = self.start_process(1, 1)
        for first in range(2, total, self.per_process):
            self.start_process(first, min(self.per_process, total - first))

    def start_process(self, first, k):
        log = open(os.path.join(self.dir, "workers-%d.out" % first), "w")
        p = subprocess.Popen(
            [common.binary("workernode"), "--head", self.address, "--name",
             "%s-worker-%d" % (self.job_id, first), "--simulate", str(k), "--fake-ranks",
             "--node", "sim", "--cpus", "8", "--gpus", "0",
             "--tls-dir", os.path.join(self.dir, "st", "tls")],
            stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.workers.append(p)
        return p

    def atlctl(self, *args, check=True):
        r = subprocess.run([common.binary("atlctl"), *args], env=self.env, capture_output=True,
                           text=True, timeout=600)
        if check and r.returncode != 0:
            raise SystemExit("atlctl %s: %d %s %s" % (args, r.returncode, r.stdout[-500:],
                                                      r.stderr[-500:]))
        return r

    def status(self):
        return json.loads(self.atlctl("status", "--json").stdout)

    def wait_all_running(self, attempt=None, timeout=600):
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.status()
            if (len(s["ranks"]) == self.pods * RANKS_PER_POD
                    and all(r["state"] == "running" for r in s["ranks"])
                    and s["state"] == "command" and (attempt is None or s["attempt"] == attempt)):
                return s
            time.sleep(0.05)
        raise SystemExit("ranks not all running within %d s" % timeout)

    def restarted(self, act, attempt, timeout=600):
        """Seconds from act() to every rank running in attempt `attempt`.
        WAIT == "watch": the head's own word first (`atlctl status -w`, a
        line per state change, started before act: the job leaves command
        and comes back), then the full status confirms every rank runs (one
        look, or a few); "poll": the full status (8,000 ranks as JSON) every
        50 ms from act on, whose answers and parsing take a core of a
        2-core machine from the head being measured."""
        watch = None
        if WAIT == "watch":
            watch = subprocess.Popen([common.binary("atlctl"), "status", "-w"], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
            first = watch.stdout.readline()  # the state now: command
            if "command" not in first:
                raise SystemExit("atlctl status -w began with %r, not command" % first)
        try:
            t0 = time.time()
            act()
            if watch is not None:
                # Each change however short is printed (the head holds the
                # watch until the next); still, a line that never comes ends
                # the wait at `timeout`, and the full status decides.
                lines = queue.Queue()

                def read():
                    for x in watch.stdout:
                        lines.put(x)
                threading.Thread(target=read, daemon=True).start()
                left = False
                while time.time() - t0 < timeout:
                    try:
                        line = lines.get(timeout=1.0)
                    except queue.Empty:
                        if watch.poll() is not None:
                            break
                        continue
                    if "Job status:" not in line:
                        continue
                    if "command" not in line:
                        left = True
                    elif left:
                        break
            self.wait_all_running(attempt=attempt, timeout=timeout)
            took = time.time() - t0
            at = self.head_running_at(attempt)
            self.last_head = None if at is None else at - t0
            return took
        finally:
            if watch is not None:
                os.killpg(watch.pid, signal.SIGTERM)
                watch.wait(30)

    def head_running_at(self, attempt):
        """When the head said every rank of `attempt` runs ("all N ranks of
        attempt K are running", its log's local clock, ms): the restart's end
        as the head saw it, without the observer's polling in it. None when
        its output is not kept."""
        if not os.path.exists(os.path.join(self.dir, "head.out")):
            return None
        needle = " ranks of attempt %d are running" % attempt
        with open(os.path.join(self.dir, "head.out"), errors="replace") as f:
            for line in f:
                if needle in line and line.startswith("["):
                    stamp = line[1:line.index("]")]
                    whole, ms = stamp.rsplit(".", 1)
                    return time.mktime(time.strptime(whole, "%Y-%m-%d %H:%M:%S")) + int(ms) / 1000
        return None

    def head_rss_mib(self, field="VmRSS:"):
        for line in open("/proc/%d/status" % self.head.pid):
            if line.startswith(field):
                return int(line.split()[1]) / 1024
        return 0

    def head_cpu_s(self):
        fields = open("/proc/%d/stat" % self.head.pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        for p in [self.head] + self.workers:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in [self.head] + self.workers:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


NOTES = """
Notes:
- register: from starting the workernode processes to every rank running
  (connect + TLS, registration, pre-flight with its network check, placement,
  launch). restart after a delete: `atlctl delete` of one active pod, a spare
  takes its place, every rank of the next attempt running. after a kill -9:
  SIGKILL of the process of one active pod (the connection drops: the head
  knows at once), to every rank running again. after a hang: SIGSTOP of
  one (a hung machine, or one whose power or network went: no FIN), found by
  its silence (--heartbeat-timeout, 3 s by default, is most of the figure).
  status: wall time of the `atlctl status` process, start-up included (~16 ms
  of it: loading, TLS, its actor system), as a user sees it; under load it
  also waits for a core, which the head, nine simulation processes and the
  loader's atlctl share (the head answers it ahead of any queued work).
- 4,000 x 8 (32,000 ranks) gets through since the supervisor keeps counts of
  started/ended ranks (RankTable): every rank report asked "all started?" /
  "all done?" by walking the ranks, O(n^2) over a launch or end of n ranks,
  and at 32,000 a status request timed out behind it.
- every rank prints N lines: a job whose entrypoint is `seq N` on every rank
  (the stand-ins stream it in ~64 KiB chunks, each sent once the head's log
  sink acknowledged the one before, as a rank's pump does), from starting the
  workers (registration included: see that column) to the job's success;
  the head echoes every line to its stdout (/dev/null here) as well as
  writing each rank's file; lines lost: lines expected minus lines found in
  the rank files.
- Placement groups: a driver (bench/scale/pg_driver.py, atl's Python package)
  creates min(pods, 1,000) groups of 8 one-CPU bundles (STRICT_PACK) and waits
  until all are ready. A group costs O(pods) (every pod is scored): 1,000
  groups slow from ~1,700/s on 100 pods to 37/s on 4,000. Ray publishes 18.9
  groups/s at 1,000 groups; it documents ~250+ nodes for its control plane.
"""


def timed(f):
    t0 = time.time()
    f()
    return time.time() - t0


def status_latency(job, n=20):
    times = sorted(timed(lambda: job.atlctl("status")) for _ in range(n))
    return common.median(times), times[int(len(times) * 0.95) - 1]


def measure(tmp, pods, per_process):
    job = Job(tmp, pods, per_process)
    try:
        t0 = time.time()
        job.start_workers()
        job.wait_all_running()
        register = time.time() - t0
        rss = job.head_rss_mib()
        c0 = job.head_cpu_s()
        time.sleep(10)
        idle_cpu = (job.head_cpu_s() - c0) / 10 * 100
        idle_status = status_latency(job)

        job.atlctl("stop")
        fanouts = []
        for _ in range(3):
            fanouts.append(timed(lambda: job.atlctl("run", "-r", "all", "true")))
            job.atlctl("stop")
        # atlctl status while debug runs fan out to every rank, back to back.
        busy = threading.Event()
        done = threading.Event()

        def load():
            while not done.is_set():
                job.atlctl("run", "-r", "all", "true")
                busy.set()
                job.atlctl("stop")
        loader = threading.Thread(target=load)
        loader.start()
        busy.wait(120)
        loaded_status = status_latency(job)
        done.set()
        loader.join()
        rss_after = job.head_rss_mib()
        # Pods the head declared lost under that load (heartbeats late past
        # the timeout): simulated pods do not rejoin, so the restart below
        # cannot run then; the table says so.
        lost = sum(p["state"] != "joined" for p in job.status()["pods"])
        restart = killed = hung = None
        heads = [None, None, None]
        if lost == 0:
            job.atlctl("recover")
            job.wait_all_running()
            attempt = job.status()["attempt"]
            restart = job.restarted(
                lambda: job.atlctl("delete", "-p", "%s-worker-3" % job.job_id), attempt + 1)
            heads = [job.last_head]
            killed = job.restarted(lambda: os.killpg(job.victim.pid, signal.SIGKILL),
                                   attempt + 2)
            heads.append(job.last_head)
            hung = job.restarted(lambda: os.killpg(job.hung.pid, signal.SIGSTOP), attempt + 3)
            heads.append(job.last_head)
            os.killpg(job.hung.pid, signal.SIGKILL)
        return {"pods": pods, "ranks": pods * RANKS_PER_POD, "register": register,
                "status_idle": idle_status, "status_loaded": loaded_status,
                "fanout": common.median(fanouts), "restart": restart, "killed": killed, "hung": hung,
                "head_seen": heads, "rss": rss,
                "rss_after": rss_after, "idle_cpu": idle_cpu, "lost": lost}
    finally:
        job.stop()


def measure_logs(tmp, pods, per_process, lines):
    """Every rank prints `lines` lines at once (fake `seq N`, streamed in
    acknowledged chunks as a pump does) and exits: workers started -> the job
    succeeded; the head's peak RSS; lines missing from the rank files."""
    job = Job(tmp, pods, per_process, entrypoint="seq %d" % lines, tag="-logs",
              extra=("--linger", "600s"), echo_to_file=False)
    try:
        t0 = time.time()
        job.start_workers()
        deadline = time.time() + 900
        while job.atlctl("status").stdout.split()[-1] != "succeeded":
            if time.time() > deadline or job.head.poll() is not None:
                raise SystemExit("the logs job did not succeed: see " + job.dir)
            time.sleep(0.05)
        took = time.time() - t0
        peak = job.head_rss_mib("VmHWM:")
        logs = os.path.join(job.dir, "st", "logs")
        found = 0
        for name in os.listdir(logs):
            if name.startswith("rank-") and name.endswith(".log"):
                with open(os.path.join(logs, name), "rb") as f:
                    found += f.read().count(b"\n")
        return {"logs_s": took, "logs_peak_rss": peak,
                "logs_lost": pods * RANKS_PER_POD * lines - found}
    finally:
        job.stop()


def measure_pgs(tmp, pods, per_process, groups):
    """A driver-mode job on the same simulated pods: `groups` placement groups
    of 8 one-CPU bundles, created and ready (pg_driver.py)."""
    driver = "exec python3 %s %d" % (os.path.join(common.ROOT, "bench", "scale", "pg_driver.py"),
                                     groups)
    job = Job(tmp, pods, per_process, mode="driver", entrypoint=driver)
    try:
        job.start_workers()
        code = job.head.wait(900)
        for line in open(job.out.name):
            if "PG-RESULT" in line:
                fields = dict(kv.split("=") for kv in line.split("PG-RESULT")[1].split())
                return float(fields["ready_s"]), int(fields["pods"])
        raise SystemExit("the placement-group driver failed (%s): see %s" % (code, job.out.name))
    finally:
        job.stop()


def measure_ray(tmp, pods, groups, python):
    """bench/scale/ray_side.py on a Ray cluster of `pods` nodes: its JSON."""
    log = os.path.join(tmp, "ray-%d.out" % pods)
    env = dict(os.environ, PATH=os.path.dirname(python) + os.pathsep + os.environ["PATH"],
               RAY_USAGE_STATS_ENABLED="0")
    with open(log, "w") as out:
        code = subprocess.run([python, os.path.join(common.ROOT, "bench", "scale", "ray_side.py"),
                               str(pods), str(groups)], stdout=out, stderr=subprocess.STDOUT,
                              env=env, cwd=tmp, timeout=1800).returncode
    for line in open(log):
        if line.startswith("RAY-RESULT "):
            return json.loads(line.split(" ", 1)[1])
    raise SystemExit("Ray at %d nodes failed (%d): see %s" % (pods, code, log))


def svg(rows, path):
    """Four small line charts (seconds or MiB against pods, log x axis)."""
    import math
    charts = [("register, fan-out, restarts (s)", [("register", "#2563eb"), ("fanout", "#dc2626"),
                                                    ("restart", "#16a34a"),
                                                    ("killed", "#9333ea"),
                                                    ("hung", "#ca8a04")]),
              ("atlctl status (ms, median)", [("status_idle_ms", "#2563eb"),
                                              ("status_loaded_ms", "#dc2626")]),
              ("head RSS (MiB)", [("rss", "#2563eb")]),
              ("head idle CPU (% of a core)", [("idle_cpu", "#2563eb")])]
    for r in rows:
        r["status_idle_ms"] = r["status_idle"][0] * 1000
        r["status_loaded_ms"] = r["status_loaded"][0] * 1000
    w, h, pad = 360, 220, 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (w * 2, h * 2),
           '<rect width="100%" height="100%" fill="white"/>']
    xs = [r["pods"] for r in rows]
    lx = lambda x: pad + (math.log10(x) - math.log10(min(xs))) / max(
        1e-9, math.log10(max(xs)) - math.log10(min(xs))) * (w - 2 * pad)
    for i, (title, series) in enumerate(charts):
        ox, oy = (i % 2) * w, (i // 2) * h
        top = max(max(r[k] or 0 for r in rows) for k, _ in series) * 1.1 or 1
        ly = lambda y: oy + h - pad - y / top * (h - 2 * pad)
        out.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (ox + pad, oy + 16, title))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (
            ox + pad, oy + h - pad, ox + w - pad, oy + h - pad))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (
            ox + pad, oy + pad, ox + pad, oy + h - pad))
        for x in xs:
            out.append('<text x="%.0f" y="%d" text-anchor="middle">%d</text>' % (
                ox + lx(x), oy + h - pad + 14, x))
        out.append('<text x="%d" y="%d" text-anchor="end">%.3g</text>' % (
            ox + pad - 3, oy + pad + 4, top))
        out.append('<text x="%d" y="%d" text-anchor="end">0</text>' % (ox + pad - 3, oy + h - pad))
        out.append('<text x="%d" y="%d" text-anchor="middle">pods (x8 ranks), log scale</text>' % (
            ox + w / 2, oy + h - 8))
        for j, (key, color) in enumerate(series):
            have = [r for r in rows if r.get(key) is not None]
            pts = " ".join("%.1f,%.1f" % (ox + lx(r["pods"]), ly(r[key])) for r in have)
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
                color, pts))
            for r in have:
                out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (
                    ox + lx(r["pods"]), ly(r[key]), color))
            out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (
                ox + w - pad - 80, oy + 30 + 13 * j, color, key))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,300,1000,2000,4000")
    ap.add_argument("--per-process", type=int, default=0,
                    help="simulated pods per workernode process (each one connection); "
                    "default: at least 100, at most 8 processes")
    ap.add_argument("--keep", help="put the state dirs here and keep them")
    ap.add_argument("--lines", type=int, default=1000,
                    help="lines every rank prints in the logs workload")
    ap.add_argument("--groups", type=int, default=1000,
                    help="placement groups per size (at most one per pod)")
    ap.add_argument("--ray-sizes", default="10,20",
                    help="Ray cluster sizes for the side-by-side ('' for none)")
    ap.add_argument("--ray-python",
                    default=os.path.join(common.ROOT, "build", "ray-venv", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "scale.md"))
    ap.add_argument("--wait", choices=("watch", "poll"), default="watch",
                    help="how a restart's end is seen: the head's state changes (atlctl "
                         "status -w) then one full status (watch), or the full status every "
                         "50 ms (poll: the earlier runs' way, a load of its own)")
    args = ap.parse_args()
    global WAIT
    WAIT = args.wait
    rows, ray_rows = [], []
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        if args.keep:  # the state dirs and logs stay there (to look into a failure)
            os.makedirs(args.keep, exist_ok=True)
            tmp = args.keep
        try:
            measure_all(args, tmp, rows, ray_rows)
        except BaseException:
            # The heads' and workers' own output, to see what went wrong (the
            # state dirs go with the temporary directory).
            keep = tempfile.mkdtemp(prefix="scale-failed-")
            for root, _, files in os.walk(tmp):
                for name in files:
                    if name.endswith(".out"):
                        dest = os.path.join(keep, os.path.relpath(root, tmp))
                        os.makedirs(dest, exist_ok=True)
                        shutil.copy(os.path.join(root, name), dest)
            print("the heads' and workers' output is kept in " + keep, file=sys.stderr)
            raise
    write_results(args, rows, ray_rows)


def measure_all(args, tmp, rows, ray_rows):
    """Every size on atl, then the Ray sizes: into rows and ray_rows."""
    for pods in [int(s) for s in args.sizes.split(",")]:
        r = measure(tmp, pods, args.per_process)
        groups = min(pods, args.groups)
        r["pg_groups"] = groups
        r["pg_ready"], r["pg_pods"] = measure_pgs(tmp, pods, args.per_process, groups)
        r.update(measure_logs(tmp, pods, args.per_process, args.lines))
        r["lines"] = args.lines
        rows.append(r)
        print("%(pods)d pods: register %(register).2f s, fan-out %(fanout).2f s, "
              "restart %(restart)s s, rss %(rss).0f MiB, idle cpu %(idle_cpu).1f%%, "
              "lost under load %(lost)d" % r,
              "status idle %.0f ms, loaded %.0f ms" % (r["status_idle"][0] * 1000,
                                                        r["status_loaded"][0] * 1000),
              flush=True)
    for pods in [int(s) for s in args.ray_sizes.split(",") if s]:
        if not os.access(args.ray_python, os.X_OK):
            raise SystemExit("--ray-python %s: not found (the ray_mode test makes the venv; "
                             "--ray-sizes '' skips Ray)" % args.ray_python)
        ray_rows.append(measure_ray(tmp, pods, args.groups, args.ray_python))
        print("ray %d nodes: %s" % (pods, json.dumps(ray_rows[-1])), flush=True)


def write_results(args, rows, ray_rows):
    svg_path = os.path.splitext(args.out)[0] + ".svg"
    svg(rows, svg_path)
    lines = [
        "# bench/scale: one supervisor, 10 to 4,000 simulated pods x 8 ranks",
        "",
        f"Machine: {common.machine()}.",
        f"Command: `bench/scale/run.py --sizes {args.sizes} --wait {args.wait}` (a restart's "
        "end seen by " + ("the head's state changes, `atlctl status -w`, then one full status"
                          if args.wait == "watch" else "the full status every 50 ms") + ").",
        "Pods: `workernode --simulate K --fake-ranks` processes of at least 100 pods each, at",
        "most 8 processes (one TLS connection per process), plus one spare pod; the",
        "head, the pods' agents and atlctl are real; ranks are in-process stand-ins (no",
        "processes). Head, workers and atlctl share the machine's cores.",
        "",
        f"![curves]({os.path.basename(svg_path)})",
        "",
        "| pods | ranks | register (s) | fan-out `run -r all true` (s) | restart after a "
        "delete (s) | restart after a kill -9 (s) | restart after a hang (s) | status idle (ms, median / p95) | status under fan-out (ms, median / p95) "
        "| head RSS (MiB) | RSS after runs (MiB) | head idle CPU (% core) | pods lost under "
        "fan-out load | placement groups of 8 CPUs: created + ready (groups/s) | every rank "
        f"prints {args.lines:,} lines: job end (s) | head peak RSS then (MiB) | lines lost |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    def seen(value, head):
        if value is None:
            return "— (pods lost)"
        return "%.2f" % value + (" (head %.2f)" % head if head is not None else "")

    for r in rows:
        heads = r.get("head_seen") or [None, None, None]
        restart = seen(r["restart"], heads[0])
        killed = seen(r["killed"], heads[1])
        hung = seen(r["hung"], heads[2])
        lines.append("| %d | %d | %.2f | %.2f | %s | %s | %s | %.0f / %.0f | %.0f / %.0f | %.0f | %.0f | "
                     "%.1f | %d | %d in %.2f s (%.0f/s) | %.2f | %.0f | %d |" % (
                         r["pods"], r["ranks"], r["register"], r["fanout"], restart, killed, hung,
                         r["status_idle"][0] * 1000, r["status_idle"][1] * 1000,
                         r["status_loaded"][0] * 1000, r["status_loaded"][1] * 1000, r["rss"],
                         r["rss_after"], r["idle_cpu"], r["lost"], r["pg_groups"], r["pg_ready"],
                         r["pg_groups"] / r["pg_ready"], r["logs_s"], r["logs_peak_rss"],
                         r["logs_lost"]))
    lines += ["", "Goals at 1,000 x 8 (issue 14): fan-out <= 2 s, status <= 50 ms, head RSS <= "
              "300 MB, restart <= 3 s.",
              "",
              "Restarts: from the fault (the bench's clock as it acts) to every rank of the next "
              "attempt running as `atlctl status` shows it; in brackets, to the head's own line "
              "saying so (\"all N ranks of attempt K are running\", its log's clock: the same "
              "machine's), without the observer's polling in it."]
    if ray_rows:
        ray_version = subprocess.run([args.ray_python, "-c", "import ray; print(ray.__version__)"],
                                     capture_output=True, text=True).stdout.strip()
        lines += [
            "",
            f"## The same workloads on Ray {ray_version}, same machine, same run",
            "",
            "`bench/scale/ray_side.py`: a `ray.cluster_utils.Cluster` of a head with no CPUs and",
            "N nodes of 8 CPUs, each node a raylet of its own (as a pod would run), one GCS, the",
            "dashboard off (as atl's was). A Ray node is processes, not an actor (a raylet, and",
            "a worker process per CPU once tasks run): a few dozen nodes are what 2 cores and",
            "24 GiB hold, so Ray runs at the small sizes only.",
            "",
            "| nodes | CPUs | register (s) | a task per CPU, first: workers start (s) | a task "
            "per CPU, warm (s) | node killed -> marked dead (s) | `ray status` (ms, median / p95) "
            "| head RSS (MiB, processes) | head idle CPU (% core) | placement groups of 8 CPUs: "
            "created + ready (groups/s) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in ray_rows:
            killed = "%.2f" % r["killed_detected"] if r["killed_detected"] is not None else "—"
            lines.append("| %d | %d | %.2f | %.2f | %.2f | %s | %.0f / %.0f | %.0f (%d) | %.1f | "
                         "%d in %.2f s (%.0f/s) |" % (
                             r["pods"], r["pods"] * RANKS_PER_POD, r["register"],
                             r["fanout_cold"], r["fanout"], killed, r["status"][0] * 1000,
                             r["status"][1] * 1000, r["rss"], r["head_processes"], r["idle_cpu"],
                             r["pg_groups"], r["pg_ready"], r["pg_groups"] / r["pg_ready"]))
        lines += [
            "",
            "Where they map: register = atl's register minus its launch; a task per CPU = "
            "`atlctl run -r all true` (Ray's warm workers vs atl's in-process stand-ins; "
            "the first call is what a cold Ray pays); node killed -> marked dead is only "
            "the detection half of atl's restart after a kill -9 (Ray restarts no job); "
            "`ray status` = `atlctl status`. Ray has no restart of a job after a lost "
            "node to compare.",
        ]
    lines += NOTES.rstrip("\n").split("\n")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s and %s" % (args.out, svg_path))


if __name__ == "__main__":
    main()
