"""A rank killed for memory is said to be, with what to do: the rank itself
SIGKILLed by the OOM killer, and the everyday shape, a DataLoader worker
killed so that the rank raises "DataLoader worker ... exited unexpectedly"
and exits 1. The job runs in a memory cgroup of the test's own (v1 or v2,
as root), as a pod's container does, with no swap."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid

import pytest

from conftest import BIN

LIMIT = 768 << 20

# Grows until the cgroup's limit ends it.
HOG = """import time
print("allocating", flush=True)
held = []
while True:
    held.append(bytearray(64 << 20))
    time.sleep(0.01)
"""

# torch DataLoader with 2 workers, one of which grows until it is killed.
LOADER = """import time, torch
from torch.utils.data import DataLoader, Dataset

class Data(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        if i == 5:
            held = []
            while True:
                held.append(bytearray(64 << 20))
                time.sleep(0.01)
        time.sleep(0.05)
        return torch.zeros(4)

print("loading", flush=True)
for batch in DataLoader(Data(), batch_size=2, num_workers=2):
    pass
print("never here", flush=True)
"""


class MemoryCgroup:
    """A memory cgroup of this test's own with LIMIT and no swap."""

    def __init__(self):
        self.path, self.procs = None, None
        name = "atl-oom-" + uuid.uuid4().hex[:8]
        v2 = "/sys/fs/cgroup"
        v1 = "/sys/fs/cgroup/memory"
        try:
            if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
                self.path = os.path.join(v1, name)
                os.mkdir(self.path)
                self._write("memory.limit_in_bytes", LIMIT)
                if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
                    self._write("memory.memsw.limit_in_bytes", LIMIT)
            elif "memory" in open(os.path.join(v2, "cgroup.controllers")).read().split():
                self.path = os.path.join(v2, name)
                os.mkdir(self.path)
                self._write("memory.max", LIMIT)
                if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                    self._write("memory.swap.max", 0)
            else:
                raise OSError("no memory controller")
        except OSError as e:
            self.close()
            pytest.skip("needs a memory cgroup of its own (root, cgroup v1 or v2): %s" % e)
        self.procs = os.path.join(self.path, "cgroup.procs")

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def enter(self):
        """For preexec_fn: the child joins the cgroup before it execs."""
        with open(self.procs, "w") as f:
            f.write(str(os.getpid()))

    def close(self):
        if not self.path:
            return
        try:
            for pid in open(self.procs).read().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        except OSError:
            pass
        for _ in range(100):
            try:
                os.rmdir(self.path)
                break
            except OSError:
                import time
                time.sleep(0.05)


def run_job(program):
    group = MemoryCgroup()
    tmp = tempfile.mkdtemp(prefix="atl-oom-")
    try:
        with open(os.path.join(tmp, "job.py"), "w") as f:
            f.write(program)
        r = subprocess.run(
            [os.path.join(BIN, "headnode"), "--workers", "1", "--local-workers", "1", "--port",
             "0", "--bind", "127.0.0.1", "--dashboard-port", "off", "--insecure", "--linger",
             "0s", "--state-dir", os.path.join(tmp, "state"), "--max-restarts", "0", "--",
             sys.executable, os.path.join(tmp, "job.py")],
            cwd=tmp, preexec_fn=group.enter, capture_output=True, text=True, timeout=240)
        return r.returncode, r.stdout + r.stderr
    finally:
        group.close()
        shutil.rmtree(tmp, ignore_errors=True)


OUT_OF_MEMORY = ("out of memory: the kernel's OOM killer ended a process of this pod while it "
                 "ran; give the pod more memory, or use less")


def failure_line(out):
    lines = [x for x in out.splitlines() if "job failed" in x or "failed:" in x]
    return "\n".join(lines)


def test_a_rank_the_oom_killer_ended_is_said_to_be_out_of_memory():
    code, out = run_job(HOG)
    assert code == 1, out
    assert "allocating" in out, out
    # Its shell (`sh -c`) says 137: the hint is the same behind a wrapper.
    assert ("ended with exit code 137 (128+9: a shell's word for its command killed by "
            "SIGKILL): " + OUT_OF_MEMORY in out or
            "killed by signal 9 (SIGKILL): " + OUT_OF_MEMORY in out), failure_line(out) or out


def test_a_dataloader_worker_the_oom_killer_ended_is_named_in_the_ranks_failure():
    pytest.importorskip("torch")
    code, out = run_job(LOADER)
    assert code == 1, out
    assert "loading" in out and "never here" not in out, out
    assert "exited unexpectedly" in out, out  # torch's own word, in the rank's log
    assert "ended with exit code 1: " + OUT_OF_MEMORY in out, failure_line(out) or out
