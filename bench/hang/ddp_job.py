"""The training job bench/hang injects faults into: a small torch DDP model
(gloo on CPU), the same under atl and under torchrun, with a DataLoader of
$HANG_BENCH_WORKERS workers (0: none, a tensor reused). Each step ends with an
explicit all_reduce of a metric, as training loops that log a global loss do.
It leaves what the bench reads in files of $HANG_BENCH_DIR (no parsing of
prefixed output):

  pid-A-R     rank R's pid in attempt A
  step0-A-R   the time rank R finished its first step in attempt A
  last-A-R    the time of rank R's latest output line (its progress)

and picks up a fault for attempt A from fault-A: rank 1 does it inside its
training step -- "spin" (a Python loop), "sleep", "lock" (a threading.Lock
taken twice), "fifo" (a blocking read of a FIFO nobody writes), "pause"
(libc's pause() via ctypes), "subprocess" (waiting on a child that never
ends), "skip" (skips the metric's all_reduce for a recv nobody answers) -- or, "loader", its
DataLoader's workers block in the dataset. A SIGSTOP comes from the bench.
"""
import os
import time

rank = int(os.environ["RANK"])
attempt = os.environ.get("ATL_RESTART_COUNT", os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
d = os.environ["HANG_BENCH_DIR"]
workers = int(os.environ.get("HANG_BENCH_WORKERS", "0"))


def mark(name, value):
    tmp = "%s/.%s-%s-%d" % (d, name, attempt, rank)
    with open(tmp, "w") as f:
        f.write(str(value))
    os.replace(tmp, "%s/%s-%s-%d" % (d, name, attempt, rank))


def fault():
    if rank != 1:
        return None
    try:
        with open("%s/fault-%s" % (d, attempt)) as f:
            return f.read().strip()
    except OSError:
        return None


mark("pid", os.getpid())
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Data(Dataset):
    def __len__(self):
        return 10**9

    def __getitem__(self, i):
        if fault() == "loader":
            time.sleep(10**6)
        return torch.randn(64)


def injected_fault(kind):
    if kind == "spin":
        while True:
            pass
    if kind == "sleep":
        time.sleep(10**6)
    if kind == "lock":
        import threading
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()
    if kind == "fifo":
        path = "%s/fifo-%s" % (d, attempt)
        os.mkfifo(path)
        with open(path) as f:
            f.read()
    if kind == "pause":
        import ctypes
        ctypes.CDLL(None).pause()
    if kind == "subprocess":
        import subprocess
        subprocess.run(["sleep", "1000000"])


def train_step(model, opt, x):
    kind = fault()
    injected_fault(kind)
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    metric = loss.detach().clone()
    if kind == "skip":
        # Another code path: the metric's all_reduce skipped, rank 1 waits
        # on a message no peer sends while they wait in the all_reduce.
        dist.recv(torch.zeros(1), src=0, tag=977)
    dist.all_reduce(metric)


def batches():
    if workers == 0:
        x = torch.randn(16, 64)
        while True:
            yield x
    yield from DataLoader(Data(), batch_size=16, num_workers=workers)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(64, 64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, x in enumerate(batches()):
        train_step(model, opt, x)
        if step == 0:
            mark("step0", time.time())
        if step % 10 == 0:
            print("step", step, flush=True)
            mark("last", time.time())
        time.sleep(0.02)
