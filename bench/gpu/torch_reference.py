"""The same measures with PyTorch, for comparison in the same run: bf16
torch.matmul TFLOP/s and pinned-memory copies. Prints a markdown table, or one
line saying why it cannot (no torch, no CUDA)."""
import sys
import time

try:
    import torch
except ImportError:
    print("torch reference: torch is not installed here")
    sys.exit(0)
if not torch.cuda.is_available():
    print("torch reference: torch sees no CUDA device")
    sys.exit(0)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
nbytes = int(sys.argv[2]) if len(sys.argv) > 2 else 256 << 20


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / 1000 / reps


a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
gemm = timed(lambda: a @ b, 20)
host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
h2d = timed(lambda: dev.copy_(host, non_blocking=True), 10)
d2h = timed(lambda: host.copy_(dev, non_blocking=True), 10)
dev2 = torch.empty_like(dev)
d2d = timed(lambda: dev2.copy_(dev), 10)

# NCCL allreduce of world size 1, as atl-gpu-bench measures it (AlgBW).
allreduce = []
try:
    import torch.distributed as dist

    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29533", rank=0, world_size=1)
    for size in (512 << 20, 1 << 30, 2 << 30, 4 << 30):
        t = torch.ones(size // 4, dtype=torch.float32, device="cuda")
        allreduce.append((size, size / timed(lambda: dist.all_reduce(t), 5) / 1e9))
        del t
    dist.destroy_process_group()
except Exception as e:  # no NCCL in this torch: say so in the table
    allreduce_error = str(e).splitlines()[0] if str(e) else type(e).__name__
else:
    allreduce_error = None

print("| device | measure (torch) | value |\n|---:|---|---:|")
print(f"| 0 | bf16 matmul {n} (TFLOP/s) | {2 * n**3 / gemm / 1e12:.1f} |")
print(f"| 0 | H2D pinned {nbytes >> 20} MiB (GB/s) | {nbytes / h2d / 1e9:.1f} |")
print(f"| 0 | D2H pinned {nbytes >> 20} MiB (GB/s) | {nbytes / d2h / 1e9:.1f} |")
print(f"| 0 | D2D {nbytes >> 20} MiB (GB/s) | {nbytes / d2d / 1e9:.1f} |")
for size, gbps in allreduce:
    label = f"{size >> 30}G" if size >= 1 << 30 else f"{size >> 20}M"
    print(f"| 0 | NCCL all_reduce {label}, world 1 (AlgBW GB/s) | {gbps:.1f} |")
if allreduce_error:
    print(f"| 0 | NCCL all_reduce | not measured: {allreduce_error} |")
