#!/usr/bin/env python3
"""bench/allreduce: the CPU path of atl's allreduce burn (a ring over TCP
between atl-burn processes, every element verified) against torch.distributed's
gloo allreduce, same machine, same sizes, same number of processes, in one run.
Both over 127.0.0.1. Reports the median BusBW (nccl-tests' formula,
algbw * 2(n-1)/n) per size.

atl: `atl-burn allreduce --peers ... --sizes ... -d DUR` on every member; the
master prints a Round line per size and round (the warm-up round is not printed).
torch: bench/allreduce/torch_gloo.py, one warm-up then ITERATIONS timed calls.

Usage: bench/allreduce/run.py [--duration 6s] [--iterations 10] [--out bench/results/allreduce.md]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

SIZES = (8 << 20, 32 << 20, 128 << 20)
WORLDS = (2, 4)
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
ROUND = re.compile(r"Round \d+: AllReduce Perf\(GB/s\): Size=(\S+), BusBW=([0-9.]+) GB/s")


def label(size):
    return f"{size >> 30}G" if size >= 1 << 30 else f"{size >> 20}M"


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def atl_busbw(world, duration):
    peers = ",".join(f"127.0.0.1:{p}" for p in free_ports(world))
    sizes = ",".join(label(s) for s in SIZES)
    procs = [subprocess.Popen([common.binary("atl-burn"), "allreduce", "--peers", peers, "--index",
                               str(i), "--sizes", sizes, "-d", duration, "--pod", f"m{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(world)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outputs):
        if p.returncode != 0 or "#wrong 0: PASS" not in out:
            raise SystemExit(f"atl-burn allreduce failed:\n{out}")
    busbw = {label(s): [] for s in SIZES}
    for m in ROUND.finditer(outputs[0]):
        busbw[m.group(1)].append(float(m.group(2)))
    return {k: (statistics.median(v), len(v)) for k, v in busbw.items()}


def torch_busbw(world, iterations):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_gloo.py")
    port = free_ports(1)[0]
    procs = [subprocess.Popen([TORCH_PYTHON, script, str(r), str(world), str(port),
                               str(iterations)] + [str(s) for s in SIZES],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise SystemExit(f"torch gloo member failed: {err}")
    times = json.loads(outs[0][0])
    factor = 2 * (world - 1) / world
    return {label(int(s)): (statistics.median(s_ / t / 1e9 * factor for t in v), len(v))
            for s, v in times.items() for s_ in [int(s)]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="6s")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(common.ROOT, "bench", "results", "allreduce.md"))
    args = ap.parse_args()
    torch_version = subprocess.run([TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip() or "absent"
    rows = []
    for world in WORLDS:
        atl = atl_busbw(world, args.duration)
        ref = torch_busbw(world, args.iterations)
        for s in SIZES:
            k = label(s)
            rows.append((world, k, atl[k], ref[k]))
            print(f"world {world} {k}: atl {atl[k][0]:.2f} GB/s, gloo {ref[k][0]:.2f} GB/s",
                  flush=True)
    lines = [
        "# bench/allreduce: atl's TCP-ring allreduce (CPU path) against torch gloo",
        "",
        f"Machine: {common.machine()}; torch {torch_version} (gloo).",
        f"Command: `bench/allreduce/run.py --duration {args.duration} --iterations "
        f"{args.iterations}`. All members on this machine over 127.0.0.1; float32;",
        "BusBW = algbw * 2(n-1)/n, the median over atl's rounds (member 0's timing of its",
        "reduce-scatter + all-gather, inputs filled before, every element checked after)",
        "and over gloo's timed calls (rank 0, one warm-up call first).",
        "",
        "| members | size | atl BusBW (GB/s) | rounds | gloo BusBW (GB/s) | calls | atl / gloo |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for world, k, (a, an), (g, gn) in rows:
        lines.append(f"| {world} | {k} | {a:.2f} | {an} | {g:.2f} | {gn} | **{a / g:.2f}x** |")
    lines += ["",
              "On 2 shared cores four members oversubscribe the machine: those rows measure "
              "scheduling as much as the ring. What matters for a burn: the figures are real "
              "bytes over real sockets, in the seed's format, with #wrong checked."]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
