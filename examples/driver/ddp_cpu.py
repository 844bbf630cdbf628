"""A driver that starts PyTorch DDP ranks itself (headnode --mode driver):
one STRICT_SPREAD bundle per worker, a rank in each with RANK, WORLD_SIZE and
MASTER_ADDR (bundle 0's pod) set, their output streamed back as it comes.
The ranks run examples/ddp/train.py (or the script given) on CPUs (gloo).

    headnode --mode driver --workers 2 --local-workers 2 -- \
        python3 examples/driver/ddp_cpu.py [script.py]

As torchrun does, the master's port is one the master's own host picked free
(a port drawn at random can be taken there, and then rank 0 cannot serve the
rendezvous), and a rank that fails stops the others: the rest would wait for
it in their rendezvous or a collective for torch's 30-minute timeout.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import atl  # noqa: E402


def free_port(pg):
    """A TCP port free on bundle 0's host, as that host's kernel picks one."""
    probe = atl.run(f"exec {sys.executable} -c 'import socket; s = socket.socket(); "
                    f"s.bind((\"\", 0)); print(s.getsockname()[1])'",
                    placement_group=pg, bundle_index=0)
    if probe.wait(timeout=60) != 0:
        raise SystemExit(f"could not pick a port on the master's host: {probe.output()}")
    return int(probe.output().split()[-1])


def stop_the_others(ranks, codes, failed):
    print(f"rank {failed} ended with {codes[failed]}: stopping the other ranks", flush=True)
    for i, t in enumerate(ranks):
        if codes[i] is None:
            try:
                t.kill()
            except atl.AtlError:
                pass  # it ended meanwhile: its code is read in the loop


def main():
    atl.init()
    workers = atl.nodes()
    world = len(workers)
    pg = atl.placement_group([{"CPU": 1}] * world, strategy="STRICT_SPREAD")
    pg.ready(timeout=60)
    address = {n["pod"]: n["address"] for n in workers}
    master = address[pg.bundle_nodes[0]]
    port = free_port(pg)
    train = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "ddp", "train.py")
    ranks = []
    for rank in range(world):
        env = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": "0",
               "MASTER_ADDR": master, "MASTER_PORT": str(port)}
        ranks.append(atl.run(f"exec {sys.executable} {train}", placement_group=pg,
                             bundle_index=rank, env=env))
    print(f"{world} ranks started, master {master}:{port}", flush=True)
    codes = [None] * world
    while None in codes:
        for i, t in enumerate(ranks):
            for line in t.read_new().splitlines():
                print(f"rank {i}> {line}", flush=True)
            if codes[i] is None and t.done():
                codes[i] = t.wait()
                if codes[i] != 0:
                    stop_the_others(ranks, codes, i)
        time.sleep(0.1)
    for i, t in enumerate(ranks):  # what came after the last look
        for line in t.read_new().splitlines():
            print(f"rank {i}> {line}", flush=True)
    print(f"ranks ended with {codes}", flush=True)
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
