"""Records the flight-recorder dumps the unit tests read (collectives_test.cpp).

Runs each scenario as 3 real ranks over gloo on 127.0.0.1 with atl's hook
(libs/runtime/os/src/flight_recorder_hook.py) first on PYTHONPATH, asks every
rank for its record the way a workernode does (a byte into <dir>/<pid>.fifo)
once they are stuck, and writes <scenario>-rank<N>.json here. Needs a torch
with the flight recorder (2.5+; these were made with 2.9.1 from PyPI):

    python3 -m venv /tmp/fr && /tmp/fr/bin/pip install torch
    /tmp/fr/bin/python tests/unit/data/flight_recorder/record.py
"""
import os, shutil, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK = os.path.join(HERE, "..", "..", "..", "..", "libs", "runtime", "os", "src", "flight_recorder_hook.py")

RANK = r'''
import os, sys, time
import torch, torch.distributed as dist
rank = int(os.environ["RANK"])
dist.init_process_group("gloo")
scenario = sys.argv[1]
sub = dist.new_group([0, 1])
x = torch.ones(4)
if scenario == "ddp":
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    for step in range(4):
        if rank == 2 and step == 3:
            time.sleep(600)                       # never reaches backward
        model(torch.randn(4, 8)).sum().backward()
    time.sleep(600)
for step in range(5):
    dist.all_reduce(x)
    if rank in (0, 1):
        dist.all_reduce(x, group=sub)
    dist.broadcast(x, 0)
if scenario == "skipped":
    if rank == 2:
        time.sleep(600)                           # never enters all_reduce #11
    dist.all_reduce(x)
elif scenario == "desync":
    if rank == 1:
        dist.broadcast(x, 0)                      # where the others all_reduce
    else:
        dist.all_reduce(x)
elif scenario == "crossed":
    # rank 0 waits in the subgroup's all_reduce, rank 1 in the default group's:
    # each needs the other
    if rank == 0:
        dist.all_reduce(x, group=sub)
    dist.all_reduce(x)
time.sleep(600)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poke_and_read(d, pid, timeout=10):
    fifo = os.path.join(d, "%d.fifo" % pid)
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"d")
    os.close(fd)
    path = os.path.join(d, "%d.json" % pid)
    end = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > end:
            raise RuntimeError("no record from pid %d" % pid)
        time.sleep(0.05)
    with open(path) as f:
        return f.read()


def run(scenario, python):
    port = free_port()
    procs, dirs = [], []
    script = os.path.join(tempfile.mkdtemp(), "rank.py")
    with open(script, "w") as f:
        f.write(RANK)
    for rank in range(3):
        d = tempfile.mkdtemp(prefix="atl-fr-")
        shutil.copy(HOOK, os.path.join(d, "sitecustomize.py"))
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="3", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), PYTHONPATH=d, ATL_FLIGHT_RECORDER_DIR=d,
                   TORCH_FR_BUFFER_SIZE="256")
        procs.append(subprocess.Popen([python, script, scenario], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        dirs.append(d)
    time.sleep(8)
    try:
        for rank, (p, d) in enumerate(zip(procs, dirs)):
            text = poke_and_read(d, p.pid)
            with open(os.path.join(HERE, "%s-rank%d.json" % (scenario, rank)), "w") as f:
                f.write(text)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    for scenario in sys.argv[1:] or ["skipped", "desync", "crossed", "ddp"]:
        run(scenario, sys.executable)
        print("recorded", scenario)
