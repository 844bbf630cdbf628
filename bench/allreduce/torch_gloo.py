"""One member of torch.distributed's gloo allreduce, the reference for atl's TCP
ring (bench/allreduce/run.py starts WORLD of these). Rank 0 prints one JSON line:
{size_bytes: [seconds per allreduce, ...]}.

Usage: torch_gloo.py RANK WORLD PORT ITERATIONS SIZE_BYTES...
"""
import json
import sys
import time

import torch
import torch.distributed as dist

rank, world, port, iterations = (int(a) for a in sys.argv[1:5])
sizes = [int(a) for a in sys.argv[5:]]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=world)
times = {}
for size in sizes:
    t = torch.full((size // 4,), float(rank + 1), dtype=torch.float32)
    dist.all_reduce(t)  # warm-up: gloo connects on first use
    got = []
    for _ in range(iterations):
        t.fill_(float(rank + 1))
        t0 = time.perf_counter()
        dist.all_reduce(t)
        got.append(time.perf_counter() - t0)
    expected = world * (world + 1) / 2
    if not bool((t == expected).all()):
        raise SystemExit(f"gloo allreduce gave a wrong sum at size {size}")
    times[size] = got
dist.destroy_process_group()
if rank == 0:
    print(json.dumps(times))
