"""Several jobs on one host: two spmd jobs of local pods, started at once,
each a real torch DDP rendezvous over gloo. Neither names a MASTER_PORT:
each gets a free one of its own (torch's 29500 was both jobs' store, and
the second job's ranks failed to bind it or joined the first's)."""
import re
import shutil
import subprocess

import pytest

from conftest import Cluster

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
