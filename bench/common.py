"""Shared helpers for atl's benchmarks: where the binaries are, machine facts."""
import os
import platform
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ATL_BIN_DIR", os.path.join(ROOT, "build", "bin"))


def binary(name):
    path = os.path.join(BIN, name)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} not found: build first (scripts/build.sh)")
    return path


def machine():
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} "
            f"{platform.release()}, atl {commit}")


def wait_line(path, prefix, timeout=60):
    """The first line of the head's output file `path` that starts with
    `prefix`, waiting for it up to `timeout` seconds (exits naming the file)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for line in open(path):
            if line.startswith(prefix):
                return line
        time.sleep(0.02)
    raise SystemExit("no '%s' from the head: see %s" % (prefix, path))


def median(xs):
    return statistics.median(xs)


def workernode_pid(job_id, index):
    """The workernode process of pod `index` of job `job_id` (not a fork of it
    that shares its command line, as rank guards were before atl-guard), or None."""
    pod = f"{job_id}-worker-{index}".encode()
    found = None
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            args = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            # argv[0]: its path, or its name alone (a local pod forked by its head
            # whose title had no room for the path)
            if not (args[0] == b"workernode" or args[0].endswith(b"/workernode")) or pod not in args:
                continue
            ppid = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1]
            parent = open(f"/proc/{ppid}/cmdline", "rb").read().split(b"\0")[0]
            if parent == b"workernode" or parent.endswith(b"/workernode"):
                continue  # a fork of a workernode (the rank guards of builds before atl-guard)
            found = int(d)
        except (OSError, IndexError):
            continue
    return found


def tagged(tag):
    """Live processes (zombies excluded) whose environment holds `tag`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            if tag.encode() in open(f"/proc/{d}/environ", "rb").read():
                if open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(d))
        except OSError:
            continue
    return pids


def paired_lines(alone, other, other_name, pair_name):
    """The two closing lines of an A/B report whose runs alternate: each
    pair's ratio, then every run's time."""
    return [
        "Paired (same run) ratios %s/alone: " % pair_name
        + ", ".join("%.2f" % (b / a) for a, b in zip(alone, other)) + ".",
        "Per-run times: alone " + ", ".join("%.2f" % x for x in alone) + "; " + other_name + " "
        + ", ".join("%.2f" % x for x in other) + ".",
    ]


def go_and_time(head, go):
    """Starts start_printing_job's rank (its go file) and times it to the
    head's exit: (the head's exit code, seconds)."""
    t0 = time.time()
    open(go, "w").close()
    code = head.wait(600)
    return code, time.time() - t0


def start_printing_job(cmd, tmp, tag, extra=()):
    """bench/logs' job under a head with its dashboard: one local worker, one
    rank that says "ready" and starts `cmd` once the go file appears.
    Returns (head, its output file, state dir, rank-0's log, the go file,
    the dashboard's URL and token) once the rank has started."""
    state = os.path.join(tmp, "state-" + tag)
    go = os.path.join(tmp, "go-" + tag)
    entry = "echo ready; while [ ! -e %s ]; do sleep 0.01; done; %s" % (go, cmd)
    out = open(os.path.join(tmp, "head-%s.out" % tag), "w")
    head = subprocess.Popen([binary("headnode"), "--port", "0", "--workers", "1",
                             "--local-workers", "1", "--state-dir", state,
                             "--dashboard-port", "0", *extra, "--", entry],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    log = os.path.join(state, "logs", "rank-0.log")
    deadline = time.time() + 60
    while not (os.path.exists(log) and os.path.getsize(log) > 0):
        if time.time() > deadline or head.poll() is not None:
            raise SystemExit("the rank did not start: see " + out.name)
        time.sleep(0.01)
    url = next(l.split()[1] for l in open(out.name) if l.startswith("dashboard "))
    token = open(os.path.join(state, "dashboard-token")).read().strip()
    return head, out, state, log, go, url, token


class RayNodes:
    """A Ray cluster of the bench's own on this machine: each node a `ray start
    --block` in a session of its own, stopped through its process group and,
    for what Ray's daemons left of it, by the processes whose command line
    names this cluster's own temp dir. Never `ray stop`: that stops every Ray
    on the machine, other jobs' included."""

    def __init__(self, ray_bin, env):
        import tempfile
        self.ray_bin, self.env = ray_bin, env
        self.temp = tempfile.mkdtemp(prefix="atl-bench-ray-")
        self.procs = []

    def start(self, args, address=None, nodes=1, timeout=120):
        """`ray start --block ARGS` (the head when `address` is None), then
        wait until `address` (the head's, HOST:PORT) answers and has `nodes`
        nodes alive."""
        self.procs.append(subprocess.Popen(
            [self.ray_bin, "start", "--block", "--temp-dir", self.temp] + list(args),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env,
            start_new_session=True))
        if address is None:
            return
        python = os.path.join(os.path.dirname(self.ray_bin), "python3")
        count = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
                 "print(sum(n['Alive'] for n in ray.nodes()))")
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.procs[-1].poll() is not None:
                raise SystemExit("ray start %s ended (%d)" % (" ".join(args),
                                                            self.procs[-1].returncode))
            alive = subprocess.run([python, "-c", count, address], capture_output=True,
                                   text=True, env=self.env).stdout.strip()
            if alive == str(nodes):
                return
            time.sleep(0.3)
        raise SystemExit("Ray at %s did not show %d nodes within %d s" % (address, nodes, timeout))

    def stop(self):
        import shutil
        import signal
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # Ray's daemons that left the group: those naming this cluster's temp dir.
        kill_naming(self.temp)
        shutil.rmtree(self.temp, ignore_errors=True)


def kill_naming(path):
    """SIGKILL to every process whose command line names `path` (a directory
    of this bench's own, e.g. a Ray cluster's temp dir): what a bench
    started and lost track of, never another job's processes by their name."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if path.encode() in cmdline:
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
