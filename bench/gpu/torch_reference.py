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
print("| device | measure (torch) | value |\n|---:|---|---:|")
print(f"| 0 | bf16 matmul {n} (TFLOP/s) | {2 * n**3 / gemm / 1e12:.1f} |")
print(f"| 0 | H2D pinned {nbytes >> 20} MiB (GB/s) | {nbytes / h2d / 1e9:.1f} |")
print(f"| 0 | D2H pinned {nbytes >> 20} MiB (GB/s) | {nbytes / d2h / 1e9:.1f} |")
