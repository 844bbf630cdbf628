#!/usr/bin/env python3
"""bench/ray: a 1+2 Ray cluster (head + two workers) running
examples/ray/program.py, four ways on the same machine in the same run:

  atl              headnode --mode ray + two workernodes, each in a network
                   namespace of its own: atl starts Ray everywhere, gates on
                   Ray's API, runs the driver, stops Ray at the end.
  by hand          `ray start --head --block`, `ray start --address ...
                   --block` on each worker (once the head answers), then
                   `ray job submit`, in the same namespaces.
  atl, one host    headnode --job examples/ray/job.json --local-workers 2, no
                   namespaces (each local pod a loopback address of its own).
  by hand, one host  the same `ray start`s at 127.0.1.1, 127.0.0.2, .3 (what
                   a Ray user does for several nodes on one machine).

Measured from the first command: the driver running (it stamps the time
first thing) and the whole job's end. Needs root (ip netns) and Ray
(--ray-bin, default build/ray-venv/bin/ray, which the tests make).

Usage: bench/ray/run.py [--runs 3] [--ray-bin PATH] [--out bench/results/ray.md]
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

PROGRAM = os.path.join(common.ROOT, "examples", "ray", "program.py")
JOB = os.path.join(common.ROOT, "examples", "ray", "job.json")


def sh(cmd):
    return subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


class Hosts:
    """Three namespaces on a bridge: 10.78.<net>.1 (head), .2, .3."""

    def __init__(self, count=3):
        tag = str(random.randint(1000, 9999))
        self.net = str(random.randint(1, 250))
        self.bridge = f"atlbb{tag}"
        self.ns = [f"atlb{tag}h{k}" for k in range(count)]
        self.links = [f"b{tag}h{k}" for k in range(count)]
        if sh(f"ip link add {self.bridge} type bridge") != 0:
            raise SystemExit("bench/ray needs root (ip netns, bridges)")
        sh(f"ip addr add 10.78.{self.net}.254/24 dev {self.bridge}; ip link set {self.bridge} up")
        for k in range(count):
            ok = all(sh(c) == 0 for c in [
                f"ip netns add {self.ns[k]}",
                f"ip link add {self.links[k]} type veth peer name eth0 netns {self.ns[k]}",
                f"ip link set {self.links[k]} master {self.bridge}",
                f"ip link set {self.links[k]} up",
                f"ip -n {self.ns[k]} addr add {self.addr(k)}/24 dev eth0",
                f"ip -n {self.ns[k]} link set eth0 up",
                f"ip -n {self.ns[k]} link set lo up"])
            if not ok:
                self.close()
                raise SystemExit(f"cannot set up namespace {self.ns[k]}")

    def addr(self, k):
        return f"10.78.{self.net}.{k + 1}"

    def on(self, k):
        return ["ip", "netns", "exec", self.ns[k]]

    def close(self):
        for ns in getattr(self, "ns", []):
            sh(f"ip netns del {ns}")
        for link in self.links:
            sh(f"ip link del {link}")
        sh(f"ip link del {self.bridge}")


class OneHost:
    """No namespaces: the addresses atl gives a one-host Ray cluster."""

    def addr(self, k):
        return ["127.0.1.1", "127.0.0.2", "127.0.0.3"][k]

    def on(self, k):
        return []


def wait_file(path, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return float(open(path).read())
        time.sleep(0.01)
    return None


def env_with(ray_bin):
    env = dict(os.environ, RAY_DISABLE_USAGE_STATS="1")
    env["PATH"] = os.path.dirname(ray_bin) + ":" + env["PATH"]
    return env


def env_by_hand(ray_bin):
    # Token auth, as atl's ray mode runs Ray (and bench/driver, bench/launch):
    # Ray 2.60 turns it on once a token file is anywhere about, and then
    # refuses a client without one (the workers' health checks never passed).
    return dict(env_with(ray_bin), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=os.urandom(16).hex())


def run_atl(hosts, ray_bin):
    """(driver running, job end) in seconds from headnode's start."""
    with tempfile.TemporaryDirectory() as tmp:
        stamp = os.path.join(tmp, "driver")
        env = env_with(ray_bin)
        job_id = "jo-benchray" + "".join(random.choice("abcdef") for _ in range(6))
        t0 = time.time()
        head = subprocess.Popen(
            hosts.on(0) + [common.binary("headnode"), "--port", "0", "--job-id", job_id,
                           "--state-dir", f"{tmp}/s", "--bind", hosts.addr(0), "--job", JOB,
                           "--ray-bin", ray_bin, "--ready-timeout", "60s", "--",
                           f"date +%s.%N > {stamp}; python3 {PROGRAM}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        address = None
        for line in head.stdout:
            if line.startswith("listening on "):
                address = line.split()[2]
                break
        # The workers use the credentials the head made for the job.
        worker_env = dict(env, ATL_TLS_DIR=f"{tmp}/s/tls")
        workers = [subprocess.Popen(
            hosts.on(k) + [common.binary("workernode"), "--head", address, "--name",
                           f"{job_id}-worker-{k - 1}", "--cpus", "1", "--memory", "2Gi"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=worker_env)
            for k in (1, 2)]
        out = head.stdout.read()
        code = head.wait()
        t_end = time.time()
        for w in workers:
            w.wait(timeout=60)
        driver = wait_file(stamp, 1)
        if code != 0 or driver is None or "RAY PROGRAM OK" not in out:
            raise SystemExit(f"atl run failed (exit {code}):\n" + out[-3000:])
        return driver - t0, t_end - t0


def run_atl_one_host(ray_bin):
    """(driver running, job end): headnode --local-workers 2, one command."""
    with tempfile.TemporaryDirectory() as tmp:
        stamp = os.path.join(tmp, "driver")
        job_id = "jo-benchray" + "".join(random.choice("abcdef") for _ in range(6))
        t0 = time.time()
        run = subprocess.run(
            [common.binary("headnode"), "--port", "0", "--job-id", job_id, "--state-dir",
             f"{tmp}/s", "--job", JOB, "--local-workers", "2", "--ray-bin", ray_bin,
             "--dashboard-port", "0", "--ray-dashboard-port", "0", "--",
             f"date +%s.%N > {stamp}; python3 {PROGRAM}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env_with(ray_bin), text=True)
        t_end = time.time()
        driver = wait_file(stamp, 1)
        if run.returncode != 0 or driver is None or "RAY PROGRAM OK" not in run.stdout:
            raise SystemExit(f"atl one-host run failed (exit {run.returncode}):\n" +
                             run.stdout[-3000:])
        return driver - t0, t_end - t0


def run_by_hand(hosts, ray_bin):
    """The same cluster and program with Ray's own commands."""
    with tempfile.TemporaryDirectory() as tmp:
        stamp = os.path.join(tmp, "driver")
        env = env_by_hand(ray_bin)
        head_addr = f"{hosts.addr(0)}:6379"
        t0 = time.time()
        procs = [subprocess.Popen(
            hosts.on(0) + [ray_bin, "start", "--head", "--block", "--port", "6379",
                           "--node-ip-address", hosts.addr(0), "--dashboard-host", hosts.addr(0),
                           "--num-cpus", "1", "--disable-usage-stats",
                           "--temp-dir", f"{tmp}/ray-h"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
        for k in (1, 2):
            wait = (f"until {ray_bin} health-check --address {head_addr} >/dev/null 2>&1; "
                    f"do sleep 0.2; done; exec {ray_bin} start --address {head_addr} --block "
                    f"--node-ip-address {hosts.addr(k)} --num-cpus 1 --disable-usage-stats "
                    f"--temp-dir {tmp}/ray-w{k}")
            procs.append(subprocess.Popen(hosts.on(k) + ["sh", "-c", wait],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          env=env))
        # As a user would: wait until Ray shows all three nodes (what atl's
        # gate does), then submit (asking until the job server answers).
        python = os.path.join(os.path.dirname(ray_bin), "python3")
        count = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
                 "print(sum(n['Alive'] for n in ray.nodes()))")
        deadline = time.time() + 120
        while time.time() < deadline:
            alive = subprocess.run(hosts.on(0) + [python, "-c", count, head_addr],
                                   capture_output=True, text=True, env=env).stdout.strip()
            if alive == "3":
                break
            time.sleep(0.2)
        runtime_env = json.dumps({"env_vars": {"GREETING": "hello from runtime_env"}})
        submit = None
        deadline = time.time() + 120
        while time.time() < deadline:
            submit = subprocess.run(
                hosts.on(0) + [ray_bin, "job", "submit", "--address",
                               f"http://{hosts.addr(0)}:8265", "--runtime-env-json", runtime_env,
                               "--", "sh", "-c", f"date +%s.%N > {stamp}; python3 {PROGRAM}"],
                capture_output=True, text=True, env=env)
            if "RAY PROGRAM OK" in submit.stdout or os.path.exists(stamp):
                break
            time.sleep(0.5)
        t_end = time.time()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        # What Ray's daemons left behind: this run's own (they name its temp dirs).
        common.kill_naming(tmp)
        driver = wait_file(stamp, 1)
        if driver is None or "RAY PROGRAM OK" not in submit.stdout:
            raise SystemExit("ray job submit run failed:\n" + submit.stdout[-2000:])
        return driver - t0, t_end - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ray-bin", default=os.path.join(common.ROOT, "build", "ray-venv", "bin",
                                                      "ray"))
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "ray.md"))
    args = ap.parse_args()
    if not os.access(args.ray_bin, os.X_OK):
        raise SystemExit(f"{args.ray_bin}: no Ray (run the ray_mode test once, or --ray-bin)")
    version = subprocess.run([args.ray_bin, "--version"], capture_output=True,
                             text=True).stdout.strip()
    hosts = Hosts()
    atl, hand, atl1, hand1 = [], [], [], []
    ways = [("atl", atl, lambda: run_atl(hosts, args.ray_bin)),
            ("by hand", hand, lambda: run_by_hand(hosts, args.ray_bin)),
            ("atl, one host", atl1, lambda: run_atl_one_host(args.ray_bin)),
            ("by hand, one host", hand1, lambda: run_by_hand(OneHost(), args.ray_bin))]
    try:
        for i in range(args.runs):  # alternating: all see the same machine state
            for name, into, run in ways:
                into.append(run())
                print(f"run {i + 1} {name}: driver {into[-1][0]:.2f} s, end {into[-1][1]:.2f} s",
                      flush=True)
    finally:
        hosts.close()
    med = lambda xs, k: common.median([x[k] for x in xs])  # noqa: E731
    lines = [
        "# bench/ray: a 1+2 Ray cluster running examples/ray/program.py",
        "",
        f"Machine: {common.machine()}; {version}.",
        f"Command: `bench/ray/run.py --runs {args.runs}` (medians; the four ways alternate). "
        "Head and two workers each in a network namespace of their own, or all on one host "
        "at loopback addresses of their own; 1 CPU per node.",
        "",
        "| way | submitted -> driver running (s) | submitted -> job end (s) |",
        "|---|---:|---:|",
        f"| atl (`headnode --mode ray` + 2 `workernode`) | {med(atl, 0):.2f} | {med(atl, 1):.2f} |",
        f"| by hand (`ray start` x3, then `ray job submit`) | {med(hand, 0):.2f} | "
        f"{med(hand, 1):.2f} |",
        f"| atl, one host (`headnode --job examples/ray/job.json --local-workers 2`) | "
        f"{med(atl1, 0):.2f} | {med(atl1, 1):.2f} |",
        f"| by hand, one host (`ray start` x3 at 127.0.1.1, 127.0.0.2, .3, then `ray job "
        f"submit`) | {med(hand1, 0):.2f} | {med(hand1, 1):.2f} |",
        "",
        "Both wait for Ray to show all three nodes before the driver starts (atl's gate; by hand",
        "a `ray.nodes()` poll, then `ray job submit`). atl's end includes stopping Ray on every",
        "pod (Ray's nodes are swept at once with SIGKILL, this job's processes only: nothing of",
        "a Ray cluster outlives its attempt) until every process is gone; by hand the clock",
        "stops when `ray job submit` returns, before its nodes are stopped. The by-hand Ray runs",
        "with token auth, as atl's ray mode runs it.",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
