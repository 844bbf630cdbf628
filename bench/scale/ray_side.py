"""bench/scale's workloads on Ray 2.60, where they map, on this machine:
a ray.cluster_utils.Cluster of a head (no CPUs, as atl's head runs no ranks)
and N nodes of 8 CPUs, each node a raylet of its own, all sharing one GCS.
Run by bench/scale/run.py with the Ray venv's python; prints one JSON line.

  register  N nodes started -> all alive in the GCS
  fan-out   one task per CPU (N x 8, SPREAD) to every node and back: the
            first (Ray starts a worker process per CPU) and the median of
            three more (warm workers: the closest to atl's in-process ranks)
  status    `ray status` wall time, median / p95 of 10
  head      RSS and idle CPU (10 s) of the head node's processes (GCS,
            raylet, monitors), the dashboard off as atl's was
  killed    one node's processes SIGKILLed -> the GCS reports it dead (Ray
            restarts no job: its detection is the part that maps)
  groups    min(N, 1000) placement groups of 8 one-CPU bundles, STRICT_PACK,
            created and ready

Usage: ray_side.py N [GROUPS]
"""
import json
import os
import statistics
import subprocess
import sys
import time

import ray
from ray.cluster_utils import Cluster
from ray.util.placement_group import placement_group

CPUS = 8


def rss_mib(pids):
    total = 0
    for pid in pids:
        try:
            for line in open("/proc/%d/status" % pid):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def cpu_s(pids):
    total = 0
    for pid in pids:
        try:
            fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def head_pids(node):
    return [info.process.pid for infos in node.all_processes.values() for info in infos]


def alive_nodes():
    return sum(1 for n in ray.nodes() if n["Alive"])


def fan_out(n):
    @ray.remote(num_cpus=1, scheduling_strategy="SPREAD")
    def rank():
        return os.getpid()

    t0 = time.time()
    ray.get([rank.remote() for _ in range(n * CPUS)], timeout=900)
    return time.time() - t0


def main():
    n = int(sys.argv[1])
    groups = min(n, int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    out = {"pods": n}
    try:
        t0 = time.time()
        nodes = [cluster.add_node(num_cpus=CPUS, wait=False) for _ in range(n)]
        while alive_nodes() < n + 1:
            time.sleep(0.05)
        out["register"] = time.time() - t0

        out["fanout_cold"] = fan_out(n)
        out["fanout"] = statistics.median(fan_out(n) for _ in range(3))

        times = []
        for _ in range(10):
            t0 = time.time()
            subprocess.run(["ray", "status", "--address", cluster.address], check=True,
                           capture_output=True)
            times.append(time.time() - t0)
        times.sort()
        out["status"] = [statistics.median(times), times[8]]

        pids = head_pids(cluster.head_node)
        out["head_processes"] = len(pids)
        out["rss"] = rss_mib(pids)
        c0 = cpu_s(pids)
        time.sleep(10)
        out["idle_cpu"] = (cpu_s(pids) - c0) / 10 * 100

        t0 = time.time()
        pgs = [placement_group([{"CPU": 1}] * CPUS, strategy="STRICT_PACK")
               for _ in range(groups)]
        ray.get([pg.ready() for pg in pgs], timeout=900)
        out["pg_groups"], out["pg_ready"] = groups, time.time() - t0
        for pg in pgs:
            ray.util.remove_placement_group(pg)

        victim = nodes[-1]
        t0 = time.time()
        cluster.remove_node(victim, allow_graceful=False)
        deadline = time.time() + 120
        while alive_nodes() > n and time.time() < deadline:
            time.sleep(0.05)
        out["killed_detected"] = time.time() - t0 if alive_nodes() == n else None
    finally:
        ray.shutdown()
        cluster.shutdown()
    print("RAY-RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
