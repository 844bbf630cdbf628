#!/usr/bin/env python3
"""bench/launch: what a launch costs, against its peers, in one run.

  fanout32  `atlctl run -r all true` to 32 ranks (a local cluster of 4 workers
            x 8, parked in debugStop), timed as the whole atlctl process
  job2x2    a whole job: `headnode --workers 2 --nproc-per-node 2
            --local-workers 2 -- echo hi`, timed as the whole headnode process;
            against mpirun and against its floor on this machine (4 spawns and
            reaps of `sh -c 'echo hi'`, one TLS 1.3 handshake with client
            certificates, one loopback round trip); one job traced (perf):
            where its milliseconds and its CPU go
  status    `atlctl status`: through the head's local door (the default in the
            head's pod), and over TCP (ATL_LOCAL_DOOR=off) with TLS and with
            --insecure; the fan-out is also timed over TCP with TLS
  idle      memory of atl's own processes (head, workernodes, guards) with
            2 local workers x 2 ranks of `sleep` running: RSS summed (each
            process's shared library pages counted in each) and PSS summed
            (each shared page split among the processes that map it)

Peers, same run: `mpirun --oversubscribe -np 32 true` and `-np 4 echo hi`
(Open MPI), each run interleaved with atl's runs of the same row (this
machine's speed drifts by 10-20% between minutes); Ray 2.60 (build/ray-venv, which the tests make; left out, saying
why, without it) at its defaults (`ray start --head`, tasks at num_cpus=1;
token auth, as atl's ray mode runs it):
a warm driver's 32 tasks timed inside the driver (no-op tasks, and tasks that
each run `true` as a process), and a fresh driver process (connect, 32 no-op
tasks, exit) timed whole.

--before DIR (repeatable, with --before-label NAME): an older build's bin
folder, measured interleaved with this one run by run: the before/after of a
change on the same machine, same load.
With `perf` at hand, one fan-out of each build is traced (exec, exit and
connect events; CPU by process kind): where the launch goes.

Usage: bench/launch/run.py [--runs 10] [--before DIR [--before-label NAME]]...
                           [--out bench/results/launch.md]
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

RAY_VENV = os.path.join(common.ROOT, "build", "ray-venv")
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
HANG_S = 20
# atlctl over TCP (TLS or --insecure) instead of the head's local door.
NO_DOOR = dict(os.environ, ATL_LOCAL_DOOR="off")


def timed(cmd, env=None, limit=60):
    """Seconds `cmd` took as a whole process, or None if it hung past `limit`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return took


class Cluster:
    """A local cluster of one build, parked in debugStop (`sleep 600` stopped)."""

    def __init__(self, bin_dir, workers, per_node, insecure=False):
        self.tmp = tempfile.mkdtemp(prefix="atl-bench-launch-")
        cmd = [os.path.join(bin_dir, "headnode"), "--port", "0", "--workers", str(workers),
               "--nproc-per-node", str(per_node), "--local-workers", str(workers),
               "--state-dir", os.path.join(self.tmp, "state"), "--grace", "2s"]
        if insecure:
            cmd.append("--insecure")
        self.head = subprocess.Popen(cmd + ["--", "sleep 600"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.ctl = [os.path.join(bin_dir, "atlctl")]
        if insecure:
            self.ctl.append("--insecure")
        address_file = os.path.join(self.tmp, "state", "address")
        deadline = time.time() + 60
        while True:
            if os.path.exists(address_file):
                self.ctl += ["--address", open(address_file).read().strip()]
                out = subprocess.run(self.ctl + ["status"], capture_output=True, text=True)
                if out.stdout.strip() == "Job status:  command":
                    break
                self.ctl = self.ctl[:-2]
            if time.time() > deadline:
                self.close()
                raise SystemExit(f"cluster of {bin_dir} did not come up")
            time.sleep(0.1)
        timed(self.ctl + ["stop"])

    def fanout(self, env=None):
        took = timed(self.ctl + ["run", "-r", "all", "true"], env=env)
        timed(self.ctl + ["stop"])
        return took

    def close(self):
        self.head.terminate()
        try:
            self.head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.head.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def job2x2(bin_dir):
    with tempfile.TemporaryDirectory() as tmp:
        return timed([os.path.join(bin_dir, "headnode"), "--port", "0", "--workers", "2",
                      "--nproc-per-node", "2", "--local-workers", "2", "--state-dir",
                      os.path.join(tmp, "state"), "--", "echo hi"])


def mpirun(args):
    """Median of mpirun's runs; Open MPI 4.1 sometimes hangs at exit here:
    those runs are killed after HANG_S, counted, and left out."""
    return timed(["mpirun", "--oversubscribe", *args], MPI_ENV, HANG_S)


# --- the floor ---------------------------------------------------------------------

FLOOR_TLS = r"""
import os, socket, ssl, statistics, sys, threading, time
d, n = sys.argv[1], int(sys.argv[2])
def ctx(side):
    c = ssl.SSLContext(side)
    c.minimum_version = ssl.TLSVersion.TLSv1_3
    c.load_cert_chain(os.path.join(d, "cert.pem"), os.path.join(d, "key.pem"))
    c.load_verify_locations(os.path.join(d, "ca.pem"))
    c.verify_mode = ssl.CERT_REQUIRED
    c.check_hostname = False
    return c
server, client = ctx(ssl.PROTOCOL_TLS_SERVER), ctx(ssl.PROTOCOL_TLS_CLIENT)
listener = socket.create_server(("127.0.0.1", 0))
port = listener.getsockname()[1]
def serve():
    for _ in range(n + 1):
        conn, _ = listener.accept()
        with server.wrap_socket(conn, server_side=True) as s:
            s.recv(1)
threading.Thread(target=serve, daemon=True).start()
def once():
    t0 = time.perf_counter()
    with client.wrap_socket(socket.create_connection(("127.0.0.1", port))) as s:
        s.sendall(b"x")
        took = time.perf_counter() - t0
    return took
once()
print(statistics.median(once() for _ in range(n)))
"""


def measure_floor(bin_dir, runs):
    """What a 2x2 job cannot do without, on this machine (seconds, medians):
    its 4 ranks' processes started and reaped one after another (`sh -c
    'echo hi'`, posix_spawn and waitpid), one TLS 1.3
    handshake with client certificates on loopback (credentials of the
    job's kind, from `headnode --make-tls`), one loopback round trip. A part
    that cannot be measured here is None."""
    spawns = []
    with open(os.devnull, "wb") as null:
        for _ in range(runs):
            t0 = time.perf_counter()
            for _ in range(4):
                pid = os.posix_spawnp("sh", ["sh", "-c", "echo hi"], os.environ,
                                      file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
                os.waitpid(pid, 0)
            spawns.append(time.perf_counter() - t0)
    floor = {"spawns": common.median(spawns), "tls": None}
    with tempfile.TemporaryDirectory() as tmp:
        made = subprocess.run([os.path.join(bin_dir, "headnode"), "--make-tls",
                               os.path.join(tmp, "tls"), "--job-id", "jo-floor"],
                              capture_output=True)
        if made.returncode == 0:
            out = subprocess.run([sys.executable, "-c", FLOOR_TLS, os.path.join(tmp, "tls"),
                                  str(max(runs, 10))], capture_output=True, text=True)
            if out.returncode == 0:
                floor["tls"] = float(out.stdout.strip())
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    conn, _ = listener.accept()
    rtts = []
    for _ in range(200):
        t0 = time.perf_counter()
        client.sendall(b"x")
        conn.recv(1)
        conn.sendall(b"y")
        client.recv(1)
        rtts.append(time.perf_counter() - t0)
    for sock in (client, conn, listener):
        sock.close()
    floor["rtt"] = common.median(rtts)
    return floor


# --- memory ----------------------------------------------------------------------


def descendants(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out = [root]
    for pid in out:
        out += kids.get(pid, [])
    return out


def idle_memory(bin_dir):
    """(RSS MiB, PSS MiB, processes, kinds) of atl's own processes in an idle 2x2 job."""
    with tempfile.TemporaryDirectory() as tmp:
        head = subprocess.Popen(
            [os.path.join(bin_dir, "headnode"), "--port", "0", "--workers", "2",
             "--nproc-per-node", "2", "--local-workers", "2", "--state-dir",
             os.path.join(tmp, "state"), "--", "sleep 600"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                comms = [comm(p) for p in descendants(head.pid)]
                if comms.count("sleep") == 4:
                    break
                time.sleep(0.2)
            time.sleep(3)  # settled: heartbeats, the first progress samples
            rss = pss = 0
            kinds = {}
            for pid in descendants(head.pid):
                c = comm(pid)
                if c in ("sh", "sleep"):
                    continue  # the user's
                m = {}
                for line in open(f"/proc/{pid}/smaps_rollup"):
                    key, _, value = line.partition(":")
                    if key in ("Rss", "Pss"):
                        m[key] = int(value.split()[0])
                rss += m["Rss"]
                pss += m["Pss"]
                kinds[c] = kinds.get(c, 0) + 1
            return rss / 1024, pss / 1024, sum(kinds.values()), kinds
        finally:
            head.terminate()
            head.wait(timeout=60)


def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


# --- where a fan-out goes (perf) ---------------------------------------------------


def program_of(pid, execs):
    """What a process runs: its last exec seen in the trace, else its exe now
    (a local pod, forked by its head and not exec'd: by its name)."""
    if pid in execs:
        return execs[pid]
    try:
        if comm(pid) == "workernode":
            return "workernode"
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return "gone, never exec'd (forked guards)"


def perf_events(cmd):
    """The system's exec, exit, fork, connect and listen events and CPU
    switches while `cmd` runs, as (ms, comm, pid, event, text, cpu) with pid
    the process (thread group); None without perf or when it fails."""
    if not shutil.which("perf"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        rec = subprocess.run(["perf", "record", "-q", "-o", data, "-e",
                              "sched:sched_process_exec,sched:sched_process_exit,"
                              "sched:sched_process_fork,syscalls:sys_enter_connect,"
                              "syscalls:sys_enter_listen,sched:sched_switch",
                              "-a", "--", *cmd], capture_output=True)
        if rec.returncode != 0:
            return None
        script = subprocess.run(["perf", "script", "-i", data, "-F",
                                 "comm,pid,tid,cpu,time,event,trace"],
                                capture_output=True, text=True).stdout
    events = []
    for line in script.splitlines():
        m = re.match(r"\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)", line)
        if m:
            c, pid, _, cpu, t, event, rest = m.groups()
            events.append((float(t) * 1000, c, int(pid), event, rest, int(cpu)))
    return events


def cpu_by_process(events):
    """CPU ms of each process: each sched_switch ends a stretch of its CPU's
    previous task (the event's own pid); a stretch starts at the CPU's
    switch before it."""
    last_switch, cpu_ms = {}, {}
    for t, _, pid, event, _, cpu in events:
        if "sched_switch" in event:
            if cpu in last_switch and pid != 0:
                cpu_ms[pid] = cpu_ms.get(pid, 0.0) + t - last_switch[cpu]
            last_switch[cpu] = t
    return cpu_ms


def programs_execd(events):
    """Each process's last program exec'd in the trace (its file's name)."""
    return {e[2]: os.path.basename(e[4].split()[0].split("=", 1)[1]) for e in events
            if "sched_process_exec" in e[3]}


def descendants(events, root):
    """`root` and every process forked from it or from one of them."""
    family = {root}
    for e in events:
        m = "process_fork" in e[3] and e[2] in family and re.search(r"child_pid=(\d+)", e[4])
        if m:
            family.add(int(m.group(1)))
    return family


def trace_fanout(cluster):
    """Timeline (ms from atlctl's exec) and CPU by program of one fan-out."""
    events = perf_events([*cluster.ctl, "run", "-r", "all", "true"])
    timed(cluster.ctl + ["stop"])
    if not events:
        return None
    ctl_exec = [e for e in events if "sched_process_exec" in e[3] and "/atlctl " in e[4] + " "]
    if not ctl_exec:
        return None
    t0, ctl = ctl_exec[0][0], ctl_exec[0][2]

    def at(pred, last=False):
        found = [e[0] - t0 for e in events if pred(e)]
        return (found[-1] if last else found[0]) if found else float("nan")

    rank_exec = lambda e: "sched_process_exec" in e[3] and "filename=/bin/sh" in e[4]  # noqa: E731
    timeline = {
        "atlctl exec -> connect (door or TCP)": at(lambda e: e[2] == ctl and "connect" in e[3]),
        "-> first rank exec": at(rank_exec),
        "-> last rank exec": at(rank_exec, True),
        "-> last rank exit": at(lambda e: e[1] == "sh" and "process_exit" in e[3], True),
        "-> atlctl exit": at(lambda e: e[2] == ctl and "process_exit" in e[3]
                             and "group_dead=true" in e[4], True),
    }
    # Processes are counted by the program they ran last (an exec'd guard
    # first shows as its spawner, a vfork child).
    execs = programs_execd(events)
    cpu = {}
    for pid, ms in cpu_by_process(events).items():
        name = program_of(pid, execs)
        if name in ("perf", "python3", "python3.11"):
            continue
        name = {"sh": "ranks (sh -c true)"}.get(name, name)
        cpu[name] = cpu.get(name, 0.0) + ms
    return {"timeline": timeline, "cpu": {k: v for k, v in cpu.items() if v >= 0.05}}


def trace_job2x2(bin_dir):
    """Timeline (ms from headnode's exec) and CPU by part of one whole 2x2
    job: the head's start (its libraries' load, then its own), its local
    pods (forks of it, named workernode), the ranks, the ends."""
    with tempfile.TemporaryDirectory() as tmp:
        events = perf_events([os.path.join(bin_dir, "headnode"), "--port", "0", "--workers",
                              "2", "--nproc-per-node", "2", "--local-workers", "2",
                              "--state-dir", os.path.join(tmp, "state"), "--", "echo hi"])
    if not events:
        return None
    head_exec = [e for e in events if "sched_process_exec" in e[3] and "/headnode" in e[4]]
    if not head_exec:
        return None
    t0, head = head_exec[0][0], head_exec[0][2]
    pods = {e[2] for e in events if e[1] == "workernode"}
    execs = programs_execd(events)
    ranks = {pid for pid, prog in execs.items() if prog == "sh"}

    def at(pred, last=False):
        found = [e[0] - t0 for e in events if pred(e)]
        return (found[-1] if last else found[0]) if found else float("nan")

    def forked(e, children):
        m = re.search(r"child_pid=(\d+)", e[4])
        return "process_fork" in e[3] and e[2] == head and m and int(m.group(1)) in children

    first_rank = at(lambda e: e[2] in ranks and "sched_process_exec" in e[3])
    gone = lambda e, who: e[2] in who and "process_exit" in e[3] and "group_dead=true" in e[4]  # noqa: E731
    timeline = {
        "headnode exec -> its first fork (its libraries loaded, its options read)":
            at(lambda e: "process_fork" in e[3] and e[2] == head),
        "-> both local pods forked": at(lambda e: forked(e, pods), True),
        "-> the head listens (its last listen before the ranks: the pods' gate opens)":
            max([e[0] - t0 for e in events if e[2] == head and "listen" in e[3]
                 and e[0] - t0 < first_rank] or [float("nan")]),
        "-> first rank exec": first_rank,
        "-> last rank exit": at(lambda e: gone(e, ranks), True),
        "-> both pods gone": at(lambda e: gone(e, pods), True),
        "-> headnode gone": at(lambda e: gone(e, {head}), True),
    }
    job = descendants(events, head)  # not perf, this script or other work on the machine
    cpu = {}
    for pid, ms in cpu_by_process(events).items():
        if pid not in job:
            continue
        if pid == head:
            name = "headnode (its threads)"
        elif pid in pods:
            name = "the 2 local pods (forks of headnode)"
        elif pid in ranks:
            name = "ranks (sh -c 'echo hi')"
        elif execs.get(pid) == "atl-guard":
            name = "atl-guard (the ranks' guards, the head pod's init)"
        else:
            name = "other (forks before their exec, probes)"
        cpu[name] = cpu.get(name, 0.0) + ms
    return {"timeline": timeline, "cpu": {k: v for k, v in cpu.items() if v >= 0.05}}


# --- Ray ----------------------------------------------------------------------------

RAY_SIDE = r"""
import json, subprocess, sys, time, statistics, ray
ray.init(address=sys.argv[1])
@ray.remote
def nothing(i):
    return i
@ray.remote
def true_process(i):
    return subprocess.run(["true"]).returncode
tasks = int(sys.argv[3])
def rounds(f, n):
    ray.get([f.remote(i) for i in range(tasks)])  # warm
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        ray.get([f.remote(i) for i in range(tasks)])
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs)
n = int(sys.argv[2])
print(json.dumps({"noop": rounds(nothing, n), "process": rounds(true_process, n)}))
"""

RAY_FRESH = r"""
import sys, ray
ray.init(address=sys.argv[1])
@ray.remote
def nothing(i):
    return i
ray.get([nothing.remote(i) for i in range(int(sys.argv[2]))])
"""


def ray_side(runs, fresh_runs, tasks=32):
    """Ray's times for `tasks` tasks (seconds), or (None, why not)."""
    python = os.path.join(RAY_VENV, "bin", "python")
    ray_bin = os.path.join(RAY_VENV, "bin", "ray")
    if not os.access(python, os.X_OK) or subprocess.run(
            [python, "-c", "import ray"], capture_output=True).returncode != 0:
        return None, "Ray is not installed in build/ray-venv (the Ray tests make it)"
    # Token auth, as atl's ray mode runs it (and as Ray 2.60 insists once a
    # token file is anywhere about).
    env = dict(os.environ, RAY_DISABLE_USAGE_STATS="1", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=os.urandom(16).hex())
    port = "6399"
    address = f"127.0.0.1:{port}"
    nodes = common.RayNodes(ray_bin, env)
    try:
        nodes.start(["--head", "--port", port, "--node-ip-address", "127.0.0.1",
                     "--include-dashboard", "false"], address, 1)
        out = subprocess.run([python, "-c", RAY_SIDE, address, str(runs), str(tasks)],
                             capture_output=True,
                             text=True, env=env, timeout=600)
        if out.returncode != 0:
            return None, "Ray's warm driver failed: " + out.stderr[-300:]
        warm = json.loads(out.stdout.strip().splitlines()[-1])
        fresh = [timed([python, "-c", RAY_FRESH, address, str(tasks)], env, 120)
                 for _ in range(fresh_runs)]
        version = subprocess.run([ray_bin, "--version"], capture_output=True,
                                 text=True).stdout.strip()
        return {"noop": warm["noop"], "process": warm["process"],
                "fresh": common.median([f for f in fresh if f is not None]),
                "version": version}, ""
    finally:
        nodes.stop()


# --- the run ------------------------------------------------------------------------


def measure(builds, runs):
    """Interleaved run by run: every build's fan-out, job and status in turn, and
    mpirun's run beside each (the machine's speed drifts between minutes: a
    peer measured apart from atl is measured on another machine). Returns the
    times, the traces, and mpirun's -np 32 and -np 4 times and hangs."""
    got = {name: {"fanout": [], "fanout_tcp": [], "job": [], "status_door": [],
                  "status_tls": [], "status_plain": []}
           for name in builds}
    mpi = {"np32": [], "np4": [], "hangs": 0, "loads": [], "pairs": {name: [] for name in builds}}

    def peer(key, cmd):
        mpi["loads"].append(os.getloadavg()[0])
        t = mpirun(cmd)
        if t is None:
            mpi["hangs"] += 1
        else:
            mpi[key].append(t)
        return t

    clusters = {name: Cluster(b, 4, 8) for name, b in builds.items()}
    plain = {name: Cluster(b, 1, 1, insecure=True) for name, b in builds.items()}
    try:
        for name, c in clusters.items():
            c.fanout()  # warm: page cache, the agents' first spawn
        traces = {name: trace_fanout(c) for name, c in clusters.items()}
        for _ in range(runs):
            peer("np32", ["-np", "32", "true"])
            for name, b in builds.items():
                got[name]["fanout"].append(clusters[name].fanout())
                got[name]["fanout_tcp"].append(clusters[name].fanout(NO_DOOR))
                for _ in range(3):
                    got[name]["status_door"].append(timed(clusters[name].ctl + ["status"]))
                    got[name]["status_tls"].append(
                        timed(clusters[name].ctl + ["status"], env=NO_DOOR))
                    got[name]["status_plain"].append(
                        timed(plain[name].ctl + ["status"], env=NO_DOOR))
    finally:
        for c in list(clusters.values()) + list(plain.values()):
            c.close()
    # Whole jobs with no other cluster idling beside them.
    for _ in range(runs):
        m = peer("np4", ["-np", "4", "echo", "hi"])
        for name, b in builds.items():
            mpi["loads"].append(os.getloadavg()[0])
            got[name]["job"].append(job2x2(b))
            if m is not None:  # this run's job against this run's mpirun
                mpi["pairs"][name].append(got[name]["job"][-1] / m)
    job_traces = {name: trace_job2x2(b) for name, b in builds.items()}
    return got, traces, job_traces, mpi


def trace_tables(traces, builds, title, since):
    """The markdown of traces (a build's name -> its trace or None): the
    timeline, then the CPU by part, a column per build."""
    if not any(traces.values()):
        return []
    names = " | ".join(builds)

    def row(label, value):
        return f"| {label} | " + " | ".join(
            f"{value(traces[n]):.1f}" if traces[n] else "-" for n in builds) + " |"

    lines = ["", "## " + title, "", f"| {since} | {names} |", "|---|" + "---:|" * len(builds)]
    for key in next(t for t in traces.values() if t)["timeline"]:
        lines.append(row(key, lambda t, key=key: t["timeline"][key]))
    lines += ["", f"| CPU (ms) | {names} |", "|---|" + "---:|" * len(builds)]
    for k in sorted({k for t in traces.values() if t for k in t["cpu"]}):
        lines.append(row(k, lambda t, k=k: t["cpu"].get(k, 0)))
    lines.append(row("all", lambda t: sum(t["cpu"].values())))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--before", action="append", default=[],
                    help="an older build's bin folder, measured beside this one (repeatable)")
    ap.add_argument("--before-label", action="append", default=[],
                    help="its column's name (repeatable, in --before's order)")
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "launch.md"))
    args = ap.parse_args()
    if not shutil.which("mpirun"):
        raise SystemExit("mpirun not found: scripts/setup.sh --tests installs openmpi-bin")
    builds = {}
    for i, before in enumerate(args.before):
        label = args.before_label[i] if i < len(args.before_label) else f"before {i + 1}"
        builds[label] = os.path.abspath(before)
    builds["now"] = common.BIN
    got, traces, job_traces, mpi = measure(builds, args.runs)
    floor = measure_floor(common.BIN, args.runs)
    mem = {name: idle_memory(b) for name, b in builds.items()}
    mpi32, mpi4, hangs = mpi["np32"], mpi["np4"], mpi["hangs"]
    ray, why_not = ray_side(args.runs, max(3, args.runs // 2))
    med = {name: {k: common.median(v) * 1000 for k, v in g.items()} for name, g in got.items()}
    m32, m4 = common.median(mpi32) * 1000, common.median(mpi4) * 1000
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True,
                             env=MPI_ENV).stdout.splitlines()[0]
    now = med["now"]

    def spread(xs, scale=1000, unit="", digits=1):
        return f"{min(xs) * scale:.{digits}f}{unit} to {max(xs) * scale:.{digits}f}{unit}" \
            if xs else "-"

    def cols(key):
        return " | ".join(f"{med[n][key]:.1f}" for n in builds)

    names = " | ".join(builds)
    lines = [
        "# bench/launch: a launch against mpirun and Ray, and where it goes",
        "",
        f"Machine: {common.machine()}; {version}"
        + (f"; {ray['version']}" if ray else "") + ".",
        f"Command: `bench/launch/run.py --runs {args.runs}"
        + "".join(f" --before {b}" for b in args.before) + "` (medians; builds and mpirun "
        "interleaved run by run). TLS on (atl's default) unless said.",
        "",
        f"| | {names} | peer | atl now / peer | goal |",
        "|---|" + "---:|" * len(builds) + "---:|---:|---|",
        f"| 32-rank fan-out, `atlctl run -r all true` (ms) | {cols('fanout')} | mpirun -np 32 "
        f"true: {m32:.1f} | **{now['fanout'] / m32:.2f}x** | <= 0.5x |",
        f"| ... over TCP with TLS (`ATL_LOCAL_DOOR=off`) (ms) | {cols('fanout_tcp')} | "
        f"{m32:.1f} | {now['fanout_tcp'] / m32:.2f}x | |",
    ]
    if ray:
        lines += [
            # Issue 29's peer: "Ray's warm driver running 32 `true` tasks" (its
            # figures, ~2x at 70-104 ms, put Ray at ~40 ms: tasks that run `true`).
            f"| ... against Ray's warm driver, 32 tasks each running `true`, timed in the driver (ms) "
            f"| {cols('fanout')} | {ray['process'] * 1000:.1f} | "
            f"**{now['fanout'] / (ray['process'] * 1000):.2f}x** | <= 1.0x |",
            f"| ... against Ray's warm driver, 32 no-op tasks (no process at all) (ms) | "
            f"{cols('fanout')} | {ray['noop'] * 1000:.1f} | {now['fanout'] / (ray['noop'] * 1000):.2f}x | |",
            f"| ... against a fresh Ray driver process, 32 no-op tasks (ms) | {cols('fanout')} | "
            f"{ray['fresh'] * 1000:.1f} | {now['fanout'] / (ray['fresh'] * 1000):.2f}x | |",
        ]
    else:
        lines.append(f"| Ray | | {why_not} | | |")
    lines += [
        f"| whole 2x2 job `echo hi` (ms) | {cols('job')} | mpirun -np 4 echo hi: {m4:.1f} | "
        f"**{now['job'] / m4:.2f}x** | <= 0.5x (issue 46) |",
    ]
    if floor["tls"] is not None:
        floor_ms = (floor["spawns"] + floor["tls"] + floor["rtt"]) * 1000
        lines.append(
            f"| ... against its floor: 4 x spawn+reap of `sh -c 'echo hi'` "
            f"{floor['spawns'] * 1000:.2f} + one TLS 1.3 handshake with client certificates "
            f"{floor['tls'] * 1000:.2f} + one loopback round trip {floor['rtt'] * 1000:.3f} (ms) "
            f"| {cols('job')} | {floor_ms:.1f} | **{now['job'] / floor_ms:.1f}x** | <= 3x (issue 46) |")
    lines += [
        f"| `atlctl status` in the head's pod: the local door (ms) | {cols('status_door')} "
        "| | | <= 8 ms |",
        f"| `atlctl status` over TCP, TLS (ms) | {cols('status_tls')} | | | |",
        f"| `atlctl status` over TCP, --insecure (ms) | {cols('status_plain')} | | | |",
        "| idle head + 2 workers x 2 ranks, atl's processes: RSS summed (MiB) | "
        + " | ".join(f"{mem[n][0]:.1f}" for n in builds) + " | | | <= 50 MiB |",
        "| ... PSS summed (MiB) | " + " | ".join(f"{mem[n][1]:.1f}" for n in builds) + " | | | |",
        "| ... processes | " + " | ".join(
            f"{mem[n][2]} ({', '.join(f'{v} {k}' for k, v in sorted(mem[n][3].items()))})"
            for n in builds) + " | | | |",
        "",
        f"Spread (fastest to slowest run): 2x2 job {spread(got['now']['job'])} ms, mpirun -np 4 "
        f"{spread(mpi4)} ms, each run's job / the same run's mpirun "
        f"{spread(mpi['pairs']['now'], 1, 'x', 2)}; fan-out {spread(got['now']['fanout'])} ms, "
        f"mpirun -np 32 {spread(mpi32)} ms. Load (1-minute average) before the timed "
        f"commands: {min(mpi['loads']):.2f} to {max(mpi['loads']):.2f}.",
        "",
        f"mpirun hung at exit in {hangs} of {2 * args.runs} runs (killed after {HANG_S} s, "
        "left out of its median). Ray: `ray start --head` with its defaults (CPUs detected, "
        "tasks at num_cpus=1); the warm rows are timed inside a driver that already ran a round; "
        "atl's fan-out is always the whole `atlctl` process (start, the door or TCP and TLS, "
        "the run, the exit). A build without the local door goes over TCP in every row.",
    ]
    lines += trace_tables(
        traces, builds, "Where one 32-rank fan-out goes (perf: exec, exit, connect events; "
        "CPU from sched_switch)", "ms from atlctl's exec")
    lines += trace_tables(
        job_traces, builds, "Where one whole 2x2 job goes (perf: exec, fork, listen, exit "
        "events; CPU from sched_switch; perf's own cost makes each a little slower)",
        "ms from headnode's exec")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
