"""A Ray program as users write it, run by atl as the driver of a Ray cluster
spanning the job's pods (headnode --mode ray). ray.init() just connects: atl
set RAY_ADDRESS and the runtime env.

It checks what a job on a fresh cluster must see: every node alive, a
STRICT_SPREAD placement group over the workers, tasks and an actor placed
there, and the runtime_env's variable on every node.
"""
import os
import socket
import sys

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

WORKERS = int(os.environ.get("EXPECT_WORKERS", "2"))


@ray.remote(num_cpus=1)
def where():
    return ray.util.get_node_ip_address(), os.environ.get("GREETING")


@ray.remote(num_cpus=0)
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n, ray.util.get_node_ip_address()


def main():
    ray.init()
    alive = [n for n in ray.nodes() if n["Alive"]]
    print(f"nodes alive: {len(alive)}", flush=True)
    if len(alive) != WORKERS + 1:
        print(f"expected {WORKERS + 1} nodes", file=sys.stderr)
        return 1
    pg = placement_group([{"CPU": 1}] * WORKERS, strategy="STRICT_SPREAD")
    ray.get(pg.ready(), timeout=60)
    results = ray.get([
        where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
            placement_group=pg, placement_group_bundle_index=i)).remote()
        for i in range(WORKERS)])
    ips = sorted(ip for ip, _ in results)
    print(f"tasks ran on: {', '.join(ips)}", flush=True)
    greetings = {g for _, g in results}
    counter = Counter.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
        placement_group=pg, placement_group_bundle_index=0)).remote()
    total, actor_ip = ray.get(counter.add.remote(41))
    total, _ = ray.get(counter.add.remote(1))
    print(f"actor on {actor_ip} counted {total}", flush=True)
    ok = len(set(ips)) == WORKERS and greetings == {"hello from runtime_env"} and total == 42
    print("RAY PROGRAM OK" if ok else f"RAY PROGRAM WRONG: {results}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
