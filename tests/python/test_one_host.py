"""Several jobs on one host: two spmd jobs of local pods, started at once,
each a real torch DDP rendezvous over gloo. Neither names a MASTER_PORT:
each gets a free one of its own (torch's 29500 was both jobs' store, and
the second job's ranks failed to bind it or joined the first's). Then seven
jobs of all three modes at once."""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import BIN, ROOT, Cluster

DDP = ("/usr/bin/python3 -c \"import os, time, torch, torch.distributed as dist; "
       "dist.init_process_group('gloo'); x = torch.ones(1); dist.all_reduce(x); "
       "time.sleep(3); dist.barrier(); "
       "print('port', os.environ['MASTER_PORT'], 'sum', int(x.item()), flush=True)\"")


def test_two_local_ddp_jobs_at_once_each_get_their_own_master_port():
    if subprocess.run(["/usr/bin/python3", "-c", "import torch.distributed"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    jobs = [Cluster(2, entrypoint=DDP, mode="spmd", nproc_per_node=2, job_id="jo-onehost%d" % i,
                    extra=("--max-restarts", "0"))
            for i in range(2)]
    try:
        ports = []
        for c in jobs:
            assert c.wait_for("Job status:  succeeded", timeout=180), c.output()
            found = re.findall(r"\[rank \d\] port (\d+) sum 4", c.output())
            assert len(found) == 4 and len(set(found)) == 1, c.output()
            ports.append(found[0])
        assert ports[0] != ports[1], ports
        assert "29500" not in ports, ports
    finally:
        for c in jobs:
            c.stop()
            shutil.rmtree(c.dir, ignore_errors=True)


def test_a_master_port_the_job_names_is_kept():
    c = Cluster(1, entrypoint="echo port $MASTER_PORT", mode="spmd",
                extra=("--master-port", "29517"))
    try:
        assert c.wait_for("Job status:  succeeded", timeout=60), c.output()
        assert "[rank 0] port 29517" in c.output(), c.output()
    finally:
        c.stop()
        shutil.rmtree(c.dir, ignore_errors=True)


def _live_processes_of(job_ids):
    """Processes (not zombies) whose environment names one of these jobs."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if any(b"ATL_JOB_ID=" + j.encode() + b"\0" in environ for j in job_ids):
            found.append(int(entry))
    return found


def test_seven_jobs_of_three_modes_at_once_on_one_host_all_succeed():
    """What a shared dev box sees: three spmd torch DDP jobs, two ray-mode
    jobs (the example program) and two driver-mode jobs (the example
    driver), started at once on one host: every one succeeds in its first
    attempt, and nothing of any is left running."""
    if subprocess.run(["/usr/bin/python3", "-c", "import torch.distributed"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    ray = os.path.join(os.path.dirname(BIN), "ray-venv", "bin", "ray")
    if not os.path.exists(ray):
        pytest.skip("no Ray venv (build/ray-venv, made by the Ray tests)")
    ray_python = os.path.join(os.path.dirname(ray), "python3")
    tag = str(os.getpid())
    jobs = []
    try:
        for i in range(3):
            jobs.append(Cluster(2, entrypoint=DDP, mode="spmd", job_id="jo-ddp%d-%s" % (i, tag),
                                extra=("--max-restarts", "0")))
        for i in range(2):
            jobs.append(Cluster(2, mode="ray", job_id="jo-ray%d-%s" % (i, tag),
                                entrypoint=ray_python + " " + os.path.join(ROOT, "examples", "ray",
                                                                            "program.py"),
                                extra=("--job", os.path.join(ROOT, "examples", "ray", "job.json"),
                                       "--ray-bin", ray, "--max-restarts", "0")))
        for i in range(2):
            jobs.append(Cluster(2, mode="driver", job_id="jo-drv%d-%s" % (i, tag),
                                entrypoint="/usr/bin/python3 " + os.path.join(
                                    ROOT, "examples", "driver", "spread.py"),
                                extra=("--max-restarts", "0")))
        for c in jobs:
            assert c.wait_for("Job status:  succeeded", timeout=600), c.output()[-6000:]
            assert c.head.wait(timeout=120) == 0, c.output()[-3000:]
        outputs = {c.job_id: c.output() for c in jobs}
        for job_id, out in outputs.items():
            assert "restart 1/" not in out, out[-6000:]
            if job_id.startswith("jo-ddp"):
                assert len(re.findall(r"\[rank \d\] port \d+ sum 2", out)) == 2, out[-3000:]
            elif job_id.startswith("jo-ray"):
                assert "[driver] RAY PROGRAM OK" in out, out[-6000:]
                assert "outlived its grace period" not in out, out[-6000:]
            else:
                assert re.search(r"\[driver\] gathered 8 results from 2 workers", out), out[-3000:]
        deadline = time.time() + 60
        while _live_processes_of(outputs) and time.time() < deadline:
            time.sleep(0.5)
        assert not _live_processes_of(outputs), _live_processes_of(outputs)
    finally:
        for c in jobs:
            c.stop()
            shutil.rmtree(c.dir, ignore_errors=True)
