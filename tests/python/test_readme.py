"""The README's commands, run as written: every command line in its ```sh
blocks (headnode, workernode, atlctl, the scripts) is extracted, and each is
either run here — on this machine, with atl's binaries on PATH, in a
directory holding the `train.py`/`driver.py`/`probe.sh` the examples name —
or listed below with the reason it cannot be (a GPU, Kubernetes, Ray from
PyPI: each covered by its own test). A README command in neither list fails
this test: a new one must be run or explained."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, ROOT, Cluster

BIN = os.path.abspath(BIN)  # the commands run from other directories

README = os.path.join(ROOT, "README.md")
COMMAND_WORDS = ("headnode", "workernode", "atlctl", "./scripts/", "scripts/")

# Commands this test does not run, and why (each is covered elsewhere).
NOT_HERE = {
    "./scripts/setup.sh --tests && ./scripts/test.sh": "this is CI's own command (.ci/run)",
    'atlctl run "nvidia-smi"': "needs NVIDIA's driver (atlctl run is run below with probe.sh)",
    "headnode --job examples/ray/job.json --bind HEAD_IP --ray-bin /opt/venv/bin/ray":
        "Ray from PyPI across pods: tests/integration/ray_mode_test.cpp",
    "workernode --head HEAD_IP:6380 --name <job-id>-worker-0 --cpus 1 --memory 2Gi":
        "Ray across pods: tests/integration/ray_mode_test.cpp",
    "scripts/demo.sh --ray": "Ray from PyPI: tests/integration/ray_mode_test.cpp",
    "headnode --workers 1000 --nproc-per-node 8 --port 6380 -- sleep 100000 &":
        "1000 simulated pods: tests/integration/scale_test.cpp (70,070 ranks)",
    "workernode --head 127.0.0.1:6380 --name jo-...-worker-0 --simulate 500 --fake-ranks --tls-dir ... &":
        "simulated pods: tests/integration/scale_test.cpp",
    "workernode --head 127.0.0.1:6380 --name jo-...-worker-500 --simulate 500 --fake-ranks --tls-dir ... &":
        "simulated pods: tests/integration/scale_test.cpp",
}

# Commands run as they stand in the README, from the repository's root or a
# directory with the examples' files, each to exit 0 within its time.
RUN_AS_WRITTEN = {
    "headnode --workers 2 --nproc-per-node 2 --local-workers 2 -- python3 train.py",
    "headnode --mode driver --workers 2 --local-workers 2 -- python3 driver.py",
    "headnode --job examples/hello/job.json --working-dir examples/hello --local-workers 2",
    "headnode --mode driver --workers 2 --local-workers 2 -- python3 examples/driver/spread.py",
    "headnode --mode driver --workers 2 --local-workers 2 -- python3 examples/driver/ddp_cpu.py",
}

# Run by the tests below, in a job (the debug workflow, the incident reads).
IN_A_JOB = {
    "atlctl status", "atlctl stop", "atlctl run -r 0,2-3 ./probe.sh", "atlctl recover",
    "atlctl dashboard-url", "atlctl logs --attempt 1 -r 3 --timestamps",
    "atlctl logs --since 10m", "atlctl logs -f --timestamps", "atlctl events",
}
# Run by test_a_head_started_alone_is_joined_by_the_lines_it_prints.
TWO_STEPS = {
    "headnode --workers 2 --nproc-per-node 4 --port 6380 -- python3 train.py",
    "workernode --head HEAD:6380 --name <job-id>-worker-0 --tls-dir <state-dir>/tls",
}
DEMO = "./scripts/setup.sh && ./scripts/demo.sh"

TRAIN = "import os\nprint('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])\n"
DRIVER = "import os\nprint('driver of', os.environ['ATL_JOB_ID'], 'at', os.environ['ATL_ADDRESS'])\n"


def readme_commands():
    """Every command line of the README's sh blocks: comments and prompts
    ("$ ") dropped; output lines and prose are not commands."""
    found, block = [], None
    for line in open(README).read().splitlines():
        if line.startswith("```"):
            block = line[3:].strip() if block is None else None
            continue
        if block not in ("sh", "bash"):
            continue
        text = re.sub(r"\s+#.*$", "", line.strip())
        if text.startswith("$ "):
            text = text[2:]
        if text.startswith(COMMAND_WORDS):
            found.append(text)
    return found


def env_with_bin(tmp):
    env = dict(os.environ)
    # python3 is Debian's (its torch, pytest): tests use /usr/bin/python3's packages.
    env["PATH"] = os.pathsep.join([BIN, "/usr/bin", env.get("PATH", "")])
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env["ATL_JOB_FILE"] = os.path.join(tmp, "job.json")  # not /run/atl
    env["ATL_LIBRARY"] = os.environ.get("ATL_LIBRARY", os.path.join(os.path.dirname(BIN), "lib",
                                                                    "libatl.so"))
    return env


def test_every_readme_command_is_run_or_explained():
    commands = readme_commands()
    assert len(commands) > 20, commands
    known = set(NOT_HERE) | RUN_AS_WRITTEN | IN_A_JOB | TWO_STEPS | {DEMO}
    unknown = [c for c in commands if c not in known]
    assert not unknown, "README commands neither run nor explained here: %s" % unknown
    stale = [c for c in known if c not in commands]
    assert not stale, "commands this test knows that the README no longer has: %s" % stale


@pytest.mark.parametrize("command", sorted(RUN_AS_WRITTEN))
def test_a_readme_command_runs_as_written(command):
    tmp = tempfile.mkdtemp(prefix="atl-readme-")
    try:
        with open(os.path.join(tmp, "train.py"), "w") as f:
            f.write(TRAIN)
        with open(os.path.join(tmp, "driver.py"), "w") as f:
            f.write(DRIVER)
        # Paths the README gives from the repository's root stay so; the
        # examples' own files are in tmp.
        cwd = ROOT if "examples/" in command else tmp
        full = command + " --state-dir " + os.path.join(tmp, "state") if " -- " not in command \
            else command.replace(" -- ", " --state-dir %s -- " % os.path.join(tmp, "state"), 1)
        r = subprocess.run(full, shell=True, cwd=cwd, env=env_with_bin(tmp), capture_output=True,
                           text=True, timeout=300, start_new_session=True)
        assert r.returncode == 0, (command, r.returncode, r.stdout[-3000:], r.stderr[-3000:])
        assert "Job status:  succeeded" in r.stdout, r.stdout[-3000:]
        if "train.py" in command:
            assert "[rank 3] rank 3 of 4" in r.stdout, r.stdout[-3000:]
        if "driver.py" in command:
            assert "[driver] driver of jo-" in r.stdout, r.stdout[-3000:]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_head_started_alone_is_joined_by_the_lines_it_prints():
    # The README's first pair: the head as written, then each workernode line
    # it prints, pasted (here on this machine, as two "pods").
    tmp = tempfile.mkdtemp(prefix="atl-readme-")
    env = env_with_bin(tmp)
    with open(os.path.join(tmp, "train.py"), "w") as f:
        f.write(TRAIN)
    out_path = os.path.join(tmp, "head.out")
    head = subprocess.Popen(
        "headnode --workers 2 --nproc-per-node 4 --port 6380 --state-dir state -- python3 train.py",
        shell=True, cwd=tmp, env=env, stdout=open(out_path, "w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    workers = []
    try:
        deadline = time.time() + 60
        lines = []
        while len(lines) < 2:
            assert time.time() < deadline and head.poll() is None, open(out_path).read()
            lines = [l.strip() for l in open(out_path) if l.startswith("  workernode --head ")]
            time.sleep(0.1)
        for line in lines:
            assert "--tls-dir /" in line, line
            workers.append(subprocess.Popen(line, shell=True, cwd=tmp, env=env,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            start_new_session=True))
        assert head.wait(240) == 0, open(out_path).read()
        out = open(out_path).read()
        assert "[rank 7] rank 7 of 8" in out, out
        for w in workers:
            w.wait(60)
    finally:
        for p in [head] + workers:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_debug_workflow_and_the_incident_reads_in_a_job():
    tmp = tempfile.mkdtemp(prefix="atl-readme-")
    with open(os.path.join(tmp, "probe.sh"), "w") as f:
        f.write("#!/bin/sh\necho probe on rank $RANK\n")
    os.chmod(os.path.join(tmp, "probe.sh"), 0o755)
    c = Cluster(2, entrypoint='i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.2; done',
                mode="spmd", nproc_per_node=2,
                extra=("--dashboard-port", "0", "--working-dir", tmp))
    try:
        assert c.wait_for("initializing -> command"), c.output()

        env = dict(c.env, PATH=os.pathsep.join([BIN, "/usr/bin", os.environ.get("PATH", "")]))

        def run(command, timeout=120):
            return subprocess.run(command, shell=True, cwd=tmp, env=env, capture_output=True,
                                  text=True, timeout=timeout)
        for command, says in (("atlctl status", "Job status:  command"),
                              ("atlctl stop", "Stop job task success."),
                              ("atlctl run -r 0,2-3 ./probe.sh", "probe on rank 3"),
                              ("atlctl stop", ""),
                              ("atlctl recover", ""),
                              ("atlctl dashboard-url", "/login?token="),
                              ("atlctl logs --attempt 1 -r 3 --timestamps", "line 1"),
                              ("atlctl logs --since 10m", "line"),
                              ("atlctl events", "state")):
            r = run(command)
            assert r.returncode == 0, (command, r.returncode, r.stdout, r.stderr)
            assert says in r.stdout + r.stderr, (command, r.stdout, r.stderr)
        # A follow runs until stopped: it prints, with times, and is still running.
        follow = subprocess.Popen("atlctl logs -f --timestamps", shell=True, cwd=tmp, env=env,
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            first = follow.stdout.readline()
            assert re.match(r"^\[rank \d+\] \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ", first), first
            assert follow.poll() is None
        finally:
            os.killpg(follow.pid, signal.SIGKILL)
            follow.wait()
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_demo():
    # The README's first command without its setup half (CI ran setup.sh) nor
    # its build (done: rebuilding here, in parallel with other tests, would
    # relink the binaries they run; a test run beside an edit of the sources
    # saw "cannot exec headnode: Permission denied" from that): the example
    # job on a local cluster, its dashboard on a free port.
    tmp = tempfile.mkdtemp(prefix="atl-readme-")
    env = dict(os.environ, ATL_STATE_DIR=os.path.join(tmp, "state"), ATL_DEMO_LINGER="0s",
               ATL_JOB_FILE=os.path.join(tmp, "job.json"), ATL_DEMO_BUILT="1")
    try:
        r = subprocess.run(["./scripts/demo.sh"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600, start_new_session=True)
        assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
        assert "Job status:  succeeded" in r.stdout, r.stdout[-3000:]
        dashboard = [l for l in r.stdout.splitlines() if l.startswith("dashboard https://")]
        assert dashboard and not dashboard[0].endswith(":8265"), dashboard
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
