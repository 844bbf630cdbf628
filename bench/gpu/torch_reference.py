"""The same measures with PyTorch, for comparison in the same run, timed the
same way as atl-gpu-bench: bf16 matmul on the same data distribution
(uniform in [-1, 1)), 300 ms of untimed products first, then the median of
50 each timed with CUDA events; pinned-memory copies, one untimed copy then
8 in one window. Prints a markdown table, or one line saying why it cannot
(no torch, no CUDA)."""
import statistics
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


def median_each(fn, reps, warmup_s=0.3):
    t0 = time.monotonic()
    while time.monotonic() - t0 < warmup_s:
        fn()
        torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for start, stop in events:
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events) / 1000


def window(fn, reps):
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / 1000 / reps


a = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.bfloat16)
b = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.bfloat16)
out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
gemm = median_each(lambda: torch.matmul(a, b, out=out), 50)
a32, b32 = a.float(), b.float()
out32 = torch.empty(n, n, device="cuda")
torch.backends.cuda.matmul.allow_tf32 = True
tf32 = median_each(lambda: torch.matmul(a32, b32, out=out32), 50)
host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
h2d = window(lambda: dev.copy_(host, non_blocking=True), 8)
d2h = window(lambda: host.copy_(dev, non_blocking=True), 8)
dev2 = torch.empty_like(dev)
d2d = window(lambda: dev2.copy_(dev), 8)

print("| device | measure (torch) | value |\n|---:|---|---:|")
print(f"| 0 | bf16 matmul {n}, random, median of 50 (TFLOP/s) | {2 * n**3 / gemm / 1e12:.1f} |")
print(f"| 0 | tf32 matmul {n}, random, median of 50 (TFLOP/s) | {2 * n**3 / tf32 / 1e12:.1f} |")
print(f"| 0 | H2D pinned {nbytes >> 20} MiB (GB/s) | {nbytes / h2d / 1e9:.1f} |")
print(f"| 0 | D2H pinned {nbytes >> 20} MiB (GB/s) | {nbytes / d2h / 1e9:.1f} |")
print(f"| 0 | D2D {nbytes >> 20} MiB (GB/s bytes copied) | {nbytes / d2d / 1e9:.1f} |")
