"""The training job bench/hang injects faults into: a small torch DDP model
(gloo on CPU), the same under atl and under torchrun. It leaves what the
bench reads in files of $HANG_BENCH_DIR (no parsing of prefixed output):

  pid-A-R     rank R's pid in attempt A
  step0-A-R   the time rank R finished its first step in attempt A
  last-A-R    the time of rank R's latest output line (its progress)

and picks up a fault for attempt A from fault-A ("spin" or "sleep": rank 1
does it inside its training step). A SIGSTOP comes from the bench.
"""
import os
import time

rank = int(os.environ["RANK"])
attempt = os.environ.get("ATL_RESTART_COUNT", os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
d = os.environ["HANG_BENCH_DIR"]


def mark(name, value):
    tmp = "%s/.%s-%s-%d" % (d, name, attempt, rank)
    with open(tmp, "w") as f:
        f.write(str(value))
    os.replace(tmp, "%s/%s-%s-%d" % (d, name, attempt, rank))


mark("pid", os.getpid())
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(64, 64))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 64)


def injected_fault():
    try:
        with open("%s/fault-%s" % (d, attempt)) as f:
            kind = f.read().strip()
    except OSError:
        return
    if kind == "spin":
        while True:
            pass
    if kind == "sleep":
        time.sleep(10**6)


def train_step(step):
    if rank == 1:
        injected_fault()
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


step = 0
while True:
    train_step(step)
    if step == 0:
        mark("step0", time.time())
    if step % 10 == 0:
        print("step", step, flush=True)
        mark("last", time.time())
    step += 1
    time.sleep(0.02)
