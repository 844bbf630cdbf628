#!/usr/bin/env python3
"""bench/chaos: random faults against a running job, as an unlucky week in a
cluster would bring them, and what survives them.

One job on real hosts (network namespaces, run as root): the head on a
bridge address, 3 worker pods (2 active x 4 ranks, 1 spare) each in a
namespace of its own, recreated by this script when they exit (as Kubernetes
recreates a pod). Each rank prints numbered lines without pause-free spin
(~500 lines/s a rank). Each round brings one fault, chosen at random:
  worker-kill   kill -9 of a worker pod's workernode
  rank-kill     kill -9 of one rank (the job runs with --restart-on-failure)
  worker-stop   SIGSTOP of a worker pod (SIGCONT once the head declared it lost;
                the pod then finds itself fenced and leaves)
  net-cut       a worker host's only link down for 4-10 s, then up again
and waits until every rank of the next attempt runs. Measured: restarts
completed, time from the fault to every rank running again (median, max),
lines lost in finished attempts (gaps in a rank's numbering: must be 0),
processes left after the job (must be 0).

Usage: bench/chaos/run.py [--rounds 24] [--seed 1] [--out bench/results/chaos.md]
"""
import argparse
import glob
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

PODS = 3  # 2 active, 1 spare
ACTIVE = 2
RANKS_PER_POD = 4
RANKS = ACTIVE * RANKS_PER_POD
FAULTS = ["worker-kill", "rank-kill", "worker-stop", "net-cut"]


def sh(*args, check=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {r.stderr.strip()}")
    return r.returncode


class Hosts:
    """PODS namespaces on a bridge; the bridge address is the head's."""

    def __init__(self, count):
        self.tag = str(random.randrange(1000, 9999))
        self.net = str(random.randrange(1, 250))
        self.bridge = f"atlcb{self.tag}"
        self.namespaces, self.links = [], []
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"10.78.{self.net}.254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for k in range(count):
            ns, link = f"atlc{self.tag}h{k}", f"vc{self.tag}h{k}"
            self.namespaces.append(ns)
            self.links.append(link)
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "link", "set", link, "master", self.bridge)
            sh("ip", "link", "set", link, "up")
            sh("ip", "-n", ns, "addr", "add", f"{self.address(k)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def address(self, k):
        return f"10.78.{self.net}.{k + 1}"

    @property
    def head_address(self):
        return f"10.78.{self.net}.254"

    def link(self, k, up):
        sh("ip", "link", "set", self.links[k], "up" if up else "down")

    def close(self):
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)
        for link in self.links:
            sh("ip", "link", "del", link, check=False)
        sh("ip", "link", "del", self.bridge, check=False)


class Pods:
    """The worker pods, each recreated (after 0.5 s) whenever it exits."""

    def __init__(self, hosts, job_id, head, env, tmp):
        self.hosts, self.job_id, self.head, self.env, self.tmp = hosts, job_id, head, env, tmp
        self.procs = [None] * PODS
        self.recreated = 0
        self.stopping = False
        self.lock = threading.Lock()
        for k in range(PODS):
            self.start(k)
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def start(self, k):
        out = open(os.path.join(self.tmp, f"worker-{k}.log"), "a")
        self.procs[k] = subprocess.Popen(
            ["ip", "netns", "exec", self.hosts.namespaces[k], common.binary("workernode"),
             "--head", self.head, "--name", f"{self.job_id}-worker-{k}", "--node", f"host-{k}"],
            stdout=out, stderr=subprocess.STDOUT, env=self.env)

    def watch(self):
        while not self.stopping:
            with self.lock:
                for k, p in enumerate(self.procs):
                    if p.poll() is not None and not self.stopping:
                        time.sleep(0.5)
                        self.recreated += 1
                        self.start(k)
            time.sleep(0.05)

    def stop(self):
        self.stopping = True
        self.thread.join()
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()




def active_pods(address, env):
    """Indexes of the pods that run ranks now (atlctl status --json)."""
    import json
    r = subprocess.run([common.binary("atlctl"), "--address", address, "status", "--json"],
                       capture_output=True, text=True, env=env, timeout=60)
    try:
        pods = json.loads(r.stdout)["pods"]
    except (ValueError, KeyError):
        return list(range(ACTIVE))
    active = [int(p["name"].rsplit("-", 1)[1]) for p in pods
              if p.get("role") == "active" and p.get("state") == "joined"]
    return active or list(range(ACTIVE))


def rank_pids(tag):
    """pid of each rank's python process (it prints the lines)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if tag.encode() not in open(f"/proc/{d}/environ", "rb").read():
                continue
            args = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            if len(args) > 1 and args[0].endswith(b"python3") and args[1].endswith(b"rank.py"):
                found.append(int(d))
        except OSError:
            continue
    return found




RANK_SCRIPT = """import os, sys, time
d, rank, restart = sys.argv[1], os.environ["RANK"], os.environ["ATL_RESTART_COUNT"]
stamp = f"{d}/start.{rank}.{restart}"
open(stamp + ".part", "w").write(repr(time.time()))
os.rename(stamp + ".part", stamp)
i = 0
while True:
    for _ in range(50):
        i += 1
        print(f"line {i}", flush=True)
    time.sleep(0.1)
"""


def starts(tmp, restart):
    return [float(open(p).read()) for p in glob.glob(os.path.join(tmp, f"start.*.{restart}"))]


def wait_for(pred, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def count_gaps(path):
    """Lines missing from a rank log's numbering (a prefix 1..M is complete)."""
    seen = []
    for line in open(path, errors="replace"):
        m = re.match(r"line (\d+)$", line.strip())
        if m:
            seen.append(int(m.group(1)))
    if not seen:
        return 0, 0, 0
    dups = len(seen) - len(set(seen))
    gaps = max(seen) - len(set(seen))
    return len(seen), gaps, dups


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "chaos.md"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench/chaos needs root (network namespaces)")
    random.seed(args.seed)
    hosts = Hosts(PODS)
    tmp = tempfile.mkdtemp(prefix="atl-chaos-")
    job_id = "jo-chaos" + "".join(random.choice("abcdefghij") for _ in range(8))
    tag = f"ATL_CHAOS_TAG={job_id}"
    env = dict(os.environ, ATL_CHAOS_TAG=job_id, ATL_JOB_FILE=os.path.join(tmp, "job.json"))
    script = os.path.join(tmp, "rank.py")
    open(script, "w").write(RANK_SCRIPT)
    head_log = os.path.join(tmp, "head.log")
    head_out = open(head_log, "w")
    head = subprocess.Popen(
        [common.binary("headnode"), "--port", "0", "--bind", hosts.head_address, "--job-id",
         job_id, "--state-dir", os.path.join(tmp, "state"), "--workers", str(ACTIVE),
         "--spare-workers", str(PODS - ACTIVE), "--nproc-per-node", str(RANKS_PER_POD),
         "--max-restarts", str(args.rounds * 2), "--restart-on-failure", "--grace", "2s",
         "--dashboard-port", "off", "--", f"python3 {script} {tmp}"],
        stdout=head_out, stderr=subprocess.STDOUT, env=env)
    address = None
    wait_for(lambda: "listening on " in open(head_log).read(), 30)
    for line in open(head_log):
        if line.startswith("listening on "):
            address = line.split()[-1]
    if not address:
        raise SystemExit("the head did not listen:\n" + open(head_log).read())
    env["ATL_TLS_DIR"] = os.path.join(tmp, "state", "tls")
    pods = Pods(hosts, job_id, address, env, tmp)
    recovery, kinds, failed_rounds = [], [], []
    restart = 0
    try:
        if not wait_for(lambda: len(starts(tmp, 0)) >= RANKS, 60):
            raise SystemExit("the job did not start:\n" + open(head_log).read())
        for k in range(1, args.rounds + 1):
            time.sleep(random.uniform(0.5, 2.0))  # lines flow in between
            kind = random.choice(FAULTS)
            at = time.time()
            if kind == "rank-kill":
                pids = rank_pids(tag)
                if pids:
                    os.kill(random.choice(pids), signal.SIGKILL)
            else:
                # An active pod: one that runs ranks of this attempt.
                pod = random.choice(active_pods(address, env))
                pid = common.workernode_pid(job_id, pod)
                if pid is None and kind != "net-cut":
                    print(f"round {k}: pod {pod} has no process now; skipped", flush=True)
                    continue
                if kind == "worker-kill":
                    os.kill(pid, signal.SIGKILL)
                elif kind == "worker-stop":
                    seen = open(head_log).read().count(f"-worker-{pod} stopped answering")
                    os.kill(pid, signal.SIGSTOP)
                    wait_for(lambda: open(head_log).read().count(
                        f"-worker-{pod} stopped answering") > seen, 30)
                    os.kill(pid, signal.SIGCONT)
                else:
                    hosts.link(pod, False)
                    time.sleep(random.uniform(4, 10))
                    hosts.link(pod, True)
            restart += 1
            ok = wait_for(lambda: len(starts(tmp, restart)) >= RANKS, 90)
            kinds.append(kind)
            if ok:
                recovery.append(max(starts(tmp, restart)) - at)
                print(f"round {k}: {kind}: every rank running again after "
                      f"{recovery[-1]:.2f} s", flush=True)
            else:
                failed_rounds.append(k)
                print(f"round {k}: {kind}: the job did not come back within 90 s", flush=True)
                break
        time.sleep(2)
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
        pods.stop()
        head_out.close()
        hosts.close()
    # Every finished attempt: each rank's numbering without a gap or a repeat.
    lines = lost = dups = 0
    for attempt in range(1, restart + 1):
        for r in range(RANKS):
            path = os.path.join(tmp, "state", "logs", f"attempt-{attempt}", f"rank-{r}.log")
            if os.path.exists(path):
                n, gaps, d = count_gaps(path)
                lines, lost, dups = lines + n, lost + gaps, dups + d
    leaked = 0
    if wait_for(lambda: not common.tagged(tag), 20) is False:
        leaked = len(common.tagged(tag))
    text = open(head_log, errors="replace").read()
    restarted = text.count("job restarted: attempt")
    by_kind = ", ".join(f"{f} {kinds.count(f)}" for f in FAULTS)
    srt = sorted(recovery)
    out = [
        "# bench/chaos: random faults against a running job",
        "",
        f"Machine: {common.machine()}.",
        f"Command: `sudo bench/chaos/run.py --rounds {args.rounds} --seed {args.seed}`. One job: "
        f"head on a bridge, {PODS} worker pods ({ACTIVE} active x {RANKS_PER_POD} ranks, "
        f"1 spare) each in a network namespace, recreated 0.5 s after they exit; ranks print "
        f"numbered lines (~500/s each); heartbeats 500 ms / 3 s, grace 2 s, "
        f"--restart-on-failure. Recovery: from the fault (for a net cut, from the link going "
        f"down) to the last rank of the next attempt starting.",
        "",
        "| measure | result | target |",
        "|---|---:|---|",
        f"| rounds (faults: {by_kind}) | {len(kinds)} | {args.rounds} |",
        f"| restarts completed | {restarted}/{len(kinds)} | all |",
        f"| fault -> every rank running again, median | "
        f"{common.median(srt):.2f} s | |" if srt else "| fault -> running again | - | |",
        f"| fault -> every rank running again, max | {max(srt):.2f} s | |" if srt else "",
        f"| lines read back from finished attempts | {lines:,} | |",
        f"| lines lost in finished attempts (gaps in a rank's numbering) | {lost} | 0 |",
        f"| lines repeated | {dups} | 0 |",
        f"| pods recreated by the bench (as Kubernetes would) | {pods.recreated} | |",
        f"| processes left after the job | {leaked} | 0 |",
    ]
    if failed_rounds:
        out.append(f"\nRound {failed_rounds[0]} did not recover; the head's log is in {tmp}.")
    with open(args.out, "w") as f:
        f.write("\n".join(x for x in out if x) + "\n")
    print("\n".join(out))
    print(f"wrote {args.out} (logs in {tmp})")


if __name__ == "__main__":
    main()
