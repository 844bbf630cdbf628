#!/usr/bin/env python3
"""bench/driver: a driver's operations through atl's Python package against
the same through Ray 2.60 (from PyPI, in build/ray-venv), same machine, same
run, medians over --runs fresh driver processes:

  connect            atl.init() / ray.init(address=...) in a fresh process
  pg/s               placement groups of one whole-CPU bundle created + ready +
                     removed, one after another
  1,000 x num_cpus=1 Ray's "limit running tasks" pattern: 1,000 calls that each
                     hold a CPU while they run, all gathered
  actor create+call  an actor started and called once (atl: in one of the
                     driver's warm processes on a worker, as Ray's prestarted
                     workers; and an actor hosted in the caller's own process,
                     which Ray has no counterpart of)
  call round trip    one actor method call, answered
  32-task fan-out    32 calls of a trivial function from a warm driver, all gathered
                     (atl: on the warm processes; and 32 shell commands, a
                     process each)
  objects            put + read by an actor, and a result of that size back,
                     for 1 MB, 100 MB and 1 GiB numpy arrays (MB/s; the
                     driver and the actor in different processes: atl's on a
                     worker pod, Ray's on its one node, through its
                     shared-memory store)

atl: headnode --mode driver with 2 local workers of 2 CPUs; the driver
connects from outside as a second driver. Ray: `ray start --head` on this
machine (4 CPUs: the same), warm (a first round untimed), one node. The runs
alternate, atl then Ray, each a fresh driver process, both clusters up
throughout. Ray's rows are left out, saying why, when Ray cannot be installed.

Usage: bench/driver/run.py [--runs 3] [--out bench/results/driver.md]
"""
import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import common  # noqa: E402

RAY_VENV = os.path.join(common.ROOT, "build", "ray-venv")


# --- the two sides (run in a fresh process each) ----------------------------------


def per_second(op, seconds):
    """How many op(i) calls, one after another, fit in a second (over `seconds`)."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        op(n)
        n += 1
    return n / (time.perf_counter() - t0)


def median_s(op, times, after=None):
    """The median time of op(); after(what op returned) runs untimed."""
    samples = []
    for _ in range(times):
        t0 = time.perf_counter()
        made = op()
        samples.append(time.perf_counter() - t0)
        if after:
            after(made)
    return common.median(samples)


def side_atl(address, tls):
    sys.path.insert(0, os.path.join(common.ROOT, "python"))
    t0 = time.perf_counter()
    import atl
    atl.init(address, tls)
    out = {"connect_ms": (time.perf_counter() - t0) * 1000}

    def pg_cycle(_):
        pg = atl.placement_group([{"CPU": 1}])
        pg.ready(timeout=30)
        pg.remove()
    out["pg_per_s"] = per_second(pg_cycle, 2.0)

    @atl.remote
    class Pinger:
        def ping(self):
            return b"pong"

    def start_and_call():
        a = Pinger.remote()
        atl.get(a.ping.remote(), timeout=60)
        return a
    out["actor_create_call_per_s"] = 1.0 / median_s(start_and_call, 3, atl.kill)

    def host_and_call(n):
        h = atl.host_actor(f"bench-{n}", lambda d: d)
        atl.ActorHandle(f"bench-{n}").call(b"x")
        h.close()
    out["local_actor_create_call_per_s"] = per_second(host_and_call, 1.0)

    a = start_and_call()
    out["call_rtt_ms"] = 1000 * median_s(lambda: atl.get(a.ping.remote(), timeout=60), 300)
    raw = pickle.dumps(("ping", (), {}))
    out["call_rtt_raw_ms"] = 1000 * median_s(lambda: a.call(raw), 300)
    atl.kill(a)

    @atl.remote
    def nothing(i):
        return i

    atl.get([nothing.remote(i) for i in range(4)], timeout=60)  # warm
    out["fanout32_ms"] = 1000 * median_s(
        lambda: atl.get([nothing.remote(i) for i in range(32)], timeout=120), 3)

    def commands():
        for t in [atl.run("true") for _ in range(32)]:
            t.wait(timeout=60)
    out["fanout32_cmd_ms"] = 1000 * median_s(commands, 3)
    out["cpus1_x1000_s"] = limit_running(atl)
    out.update(objects(atl, atl.remote))
    atl.shutdown()
    return out


def limit_running(api):
    """Seconds for 1,000 calls that each hold one CPU (after 8 untimed)."""
    @api.remote(num_cpus=1)
    def hold(i):
        return i

    api.get([hold.remote(i) for i in range(8)])
    t0 = time.perf_counter()
    api.get([hold.remote(i) for i in range(1000)])
    return time.perf_counter() - t0


OBJECT_SIZES = (("1mb", 1 << 20, 20), ("100mb", 100 << 20, 3), ("1gib", 1 << 30, 1))


def objects(api, remote, **where):
    """MB/s of put + read on another node, and of a result that size back."""
    import numpy as np

    class Reader:
        def read(self, a):
            return a.nbytes

        def make(self, n):
            return np.ones(n, dtype=np.uint8)
    reader = remote(Reader).options(**where).remote()
    api.get(reader.read.remote(api.put(np.ones(16, dtype=np.uint8))))  # started, connected
    out = {}
    for name, size, times in OBJECT_SIZES:
        a = np.ones(size, dtype=np.uint8)
        seconds = median_s(lambda: api.get(reader.read.remote(api.put(a))), times)
        out[f"put_get_{name}_mbps"] = size / seconds / 1e6
        seconds = median_s(lambda: api.get(reader.make.remote(size)), times)
        out[f"result_{name}_mbps"] = size / seconds / 1e6
        a = None  # freed before the next size is made
    api.kill(reader)
    return out


def side_ray(address):
    t0 = time.perf_counter()
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    out = {"connect_ms": (time.perf_counter() - t0) * 1000}

    def pg_cycle(_):
        pg = placement_group([{"CPU": 1}])
        ray.get(pg.ready(), timeout=30)
        remove_placement_group(pg)
    out["pg_per_s"] = per_second(pg_cycle, 2.0)

    @ray.remote  # Ray's defaults: the peer at its best ordinary configuration
    class Pinger:
        def ping(self):
            return b"pong"

    def start_and_call():
        a = Pinger.remote()
        ray.get(a.ping.remote(), timeout=120)
        return a
    out["actor_create_call_per_s"] = 1.0 / median_s(start_and_call, 3, ray.kill)

    a = start_and_call()
    out["call_rtt_ms"] = 1000 * median_s(lambda: ray.get(a.ping.remote()), 300)
    ray.kill(a)

    @ray.remote  # num_cpus=1, Ray's default: its warm workers take the calls
    def nothing(i):
        return i

    ray.get([nothing.remote(i) for i in range(32)])  # warm
    out["fanout32_ms"] = 1000 * median_s(lambda: ray.get([nothing.remote(i) for i in range(32)]),
                                         3)
    # The earlier bench's setting, kept as its own row: num_cpus=0 tasks make
    # Ray start new worker processes every round.
    free = nothing.options(num_cpus=0)
    ray.get([free.remote(i) for i in range(32)])
    out["fanout32_cpus0_ms"] = 1000 * median_s(lambda: ray.get([free.remote(i)
                                                               for i in range(32)]), 3)
    out["cpus1_x1000_s"] = limit_running(ray)
    out.update(objects(ray, ray.remote))
    ray.shutdown()
    return out


# --- the harness ------------------------------------------------------------------


class AtlCluster:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="atl-bench-driver-")
        self.state = os.path.join(self.dir, "state")
        self.out = open(os.path.join(self.dir, "head.out"), "w")
        env = dict(os.environ, PATH=common.BIN + os.pathsep + os.environ.get("PATH", ""))
        self.head = subprocess.Popen(
            [common.binary("headnode"), "--mode", "driver", "--workers", "2", "--local-workers",
             "2", "--port", "0", "--bind", "127.0.0.1", "--state-dir", self.state, "--",
             "exec sleep 3600"],
            stdout=self.out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.address = None
        deadline = time.time() + 30
        while time.time() < deadline:
            text = open(self.out.name).read()
            if "initializing -> command" in text:
                for line in text.splitlines():
                    if line.startswith("listening on "):
                        self.address = line.split()[-1]
                break
            time.sleep(0.05)
        if not self.address:
            raise SystemExit("atl cluster did not start:\n" + open(self.out.name).read())

    def stop(self):
        self.head.send_signal(signal.SIGTERM)
        self.head.wait(60)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_side(python, args, env=None):
    out = subprocess.run([python, os.path.abspath(__file__), *args], capture_output=True,
                         text=True, timeout=900, env=env)
    if out.returncode != 0:
        raise SystemExit(f"side {args[:2]} failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ray_available():
    python = os.path.join(RAY_VENV, "bin", "python")
    if os.access(python, os.X_OK) and subprocess.run(
            [python, "-c", "import ray"], capture_output=True).returncode == 0:
        return python, ""
    made = subprocess.run(f"python3 -m venv {RAY_VENV} && {RAY_VENV}/bin/pip install -q "
                          "'ray[default]==2.60.0'", shell=True, capture_output=True, text=True)
    if made.returncode != 0:
        return None, "Ray 2.60 could not be installed from PyPI: " + made.stderr[-300:]
    return python, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "driver.md"))
    ap.add_argument("--side", choices=["atl", "ray"])
    ap.add_argument("--address")
    ap.add_argument("--tls")
    args = ap.parse_args()
    if args.side == "atl":
        print(json.dumps(side_atl(args.address, args.tls)))
        return
    if args.side == "ray":
        print(json.dumps(side_ray(args.address)))
        return

    atl_runs, ray_runs = [], []
    ray_python, why_not = ray_available()
    ray_version = ""
    cluster = AtlCluster()
    nodes = None
    try:
        address = None
        if ray_python:
            ray_bin = os.path.join(RAY_VENV, "bin", "ray")
            port = free_port()
            # Token auth, as atl's ray mode runs it: Ray 2.60 turns it on once
            # a token file is anywhere about, and then refuses a client without.
            env = dict(os.environ, RAY_DISABLE_USAGE_STATS="1", RAY_AUTH_MODE="token",
                       RAY_AUTH_TOKEN=os.urandom(16).hex())
            nodes = common.RayNodes(ray_bin, env)
            address = f"127.0.0.1:{port}"
            # One node with the CPUs atl's two pods have, its ports picked
            # now (never another Ray's on this machine).
            nodes.start(["--head", "--port", str(port), "--num-cpus", "4",
                         "--node-ip-address", "127.0.0.1", "--include-dashboard", "false",
                         "--ray-client-server-port", str(free_port()),
                         "--dashboard-agent-listen-port", str(free_port()),
                         "--min-worker-port", "0", "--max-worker-port", "0"], address, 1)
            ray_version = subprocess.run([ray_bin, "--version"], capture_output=True,
                                         text=True).stdout.strip()
        for _ in range(args.runs):  # interleaved: atl, then Ray, each run
            atl_runs.append(run_side("/usr/bin/python3", ["--side", "atl", "--address",
                                                          cluster.address, "--tls",
                                                          os.path.join(cluster.state, "tls")]))
            if address:
                ray_runs.append(run_side(ray_python, ["--side", "ray", "--address", address],
                                         env))
    finally:
        cluster.stop()
        if nodes is not None:
            nodes.stop()
    write(args, atl_runs, ray_runs, ray_version, why_not)


def write(args, atl_runs, ray_runs, ray_version, why_not):
    def med(runs, key):
        vals = [r[key] for r in runs if key in r]
        return common.median(vals) if vals else None

    def cell(v, fmt):
        return "-" if v is None else fmt.format(v)

    rows = [
        ("driver connect (ms)", "connect_ms", "{:.1f}", "lower"),
        ("placement groups created + ready + removed per s", "pg_per_s", "{:.0f}", "higher"),
        ("actors started (on a worker; atl: a warm process) + first call per s",
         "actor_create_call_per_s", "{:.1f}", "higher"),
        ("actor method call round trip, atl.get(a.ping.remote()) (ms)", "call_rtt_ms", "{:.2f}",
         "lower"),
        ("32-task fan-out from a warm driver (ms; Ray's tasks at its default num_cpus=1)",
         "fanout32_ms", "{:.1f}", "lower"),
        ("1,000 calls of num_cpus=1, all gathered (s)", "cpus1_x1000_s", "{:.2f}", "lower"),
    ] + [(f"{what} {label} (MB/s)", f"{key}_{name}_mbps", "{:.0f}", "higher")
         for what, key in (("put + read by an actor,", "put_get"),
                           ("an actor's result back,", "result"))
         for name, label in (("1mb", "1 MB"), ("100mb", "100 MB"), ("1gib", "1 GiB"))]
    lines = ["# bench/driver: a driver's operations, atl's Python package against Ray's", "",
             f"Machine: {common.machine()}; {ray_version or 'Ray not run'}.",
             f"Command: `bench/driver/run.py --runs {args.runs}` (medians over {args.runs} fresh "
             "driver processes, atl's and Ray's runs alternating). atl: a driver-mode head "
             "with 2 local workers of 2 CPUs on 127.0.0.1, the bench driving it from outside "
             "(an actor on a worker pod of the same host: big objects through shared memory, "
             "memfds mapped by the reader; across hosts they go over TLS); Ray: `ray start "
             "--head --num-cpus 4` on 127.0.0.1, one node, warm (objects through its "
             "shared-memory store). Placement groups of one whole-CPU bundle on both.", "",
             "| operation | atl | Ray 2.60 | atl / Ray |", "|---|---:|---:|---:|"]
    for label, key, fmt, better in rows:
        a, r = med(atl_runs, key), med(ray_runs, key)
        ratio = "-" if a is None or r is None or r == 0 else f"{a / r:.2f}x"
        lines.append(f"| {label} | {cell(a, fmt)} | {cell(r, fmt)} | {ratio} |")
    lines += ["", "The earlier rows' Ray setting, kept for comparison (unfair to Ray: `num_cpus=0` "
              "tasks make it start new worker processes every round): 32-task fan-out "
              f"{cell(med(ray_runs, 'fanout32_cpus0_ms'), '{:.1f}')} ms.",
              "", "atl only (no Ray counterpart):", "",
              "| operation | atl |", "|---|---:|",
              f"| actor hosted in the caller's own process + first call per s | "
              f"{cell(med(atl_runs, 'local_actor_create_call_per_s'), '{:.0f}')} |",
              f"| raw actor call round trip, bytes in and out (ms) | "
              f"{cell(med(atl_runs, 'call_rtt_raw_ms'), '{:.2f}')} |",
              f"| 32 shell commands fanned out, all ended (ms) | "
              f"{cell(med(atl_runs, 'fanout32_cmd_ms'), '{:.1f}')} |", ""]
    if why_not:
        lines += [f"Ray's rows are empty: {why_not}", ""]
    lines += ["Raw figures (per run):", "", "```",
              "atl: " + json.dumps(atl_runs), "ray: " + json.dumps(ray_runs), "```", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
