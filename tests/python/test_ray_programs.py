"""Ray Core's user guide, chapter by chapter, as programs written for Ray
(ray_programs/*.py: `import ray`, as its docs write them), each run
unchanged under Ray 2.60 and under atl (`python -m atl.as_ray PROGRAM`,
which makes `import ray` atl's), each printing what a user would see: both
must print what ray_programs/expected.json says, and exit 0.

atl's side runs in the Ray venv's Python (only what Ray brings: no top-level
cloudpickle) where it exists, else in a bare venv; Ray's side against a Ray
cluster of this test's own (4 CPUs, ports picked now, stopped through its own
processes, never `ray stop`). Without Ray (no PyPI), atl's side still runs.

    ATL_RAY_PROGRAMS_WRITE=1 pytest test_ray_programs.py -k ray_itself
writes expected.json from Ray's outputs (then read it before committing)."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT, Cluster
from test_ray_idiom import _ray_venv

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "ray_programs")
EXPECTED_PATH = os.path.join(PROGRAMS, "expected.json")
NAMES = sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.endswith(".py"))
WRITE = os.environ.get("ATL_RAY_PROGRAMS_WRITE") == "1"


def _expected():
    with open(EXPECTED_PATH) as f:
        return json.load(f)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(python, args, env, timeout=180):
    start = time.monotonic()
    try:
        r = subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout,
                           env=env, cwd=PROGRAMS)
        return r.returncode, r.stdout, r.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        return "timeout", e.stdout or "", e.stderr or "", timeout


@pytest.fixture(scope="module")
def atl_side(tmp_path_factory):
    python = _ray_venv()
    if python is None:
        venv = tmp_path_factory.mktemp("bare") / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                       timeout=120)
        python = str(venv / "bin" / "python")
    c = Cluster(2)
    try:
        assert c.wait_for("initializing -> command"), c.output()
        env = dict(c.env, ATL_ADDRESS=c.address, ATL_TLS_DIR=c.tls,
                   PYTHONPATH=os.path.join(ROOT, "python"))
        yield lambda name: _run(python, ["-m", "atl.as_ray", name + ".py"], env)
    finally:
        c.stop()


@pytest.fixture(scope="module")
def ray_side():
    python = _ray_venv()
    if python is None:
        pytest.skip("Ray 2.60 could not be installed from PyPI")
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import common
    ray_bin = os.path.join(os.path.dirname(python), "ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATL_", "RAY_"))}
    # Token auth, as atl's ray mode and bench/driver run Ray: Ray 2.60 turns
    # it on once a token file is anywhere about, and then refuses a client
    # without one.
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=os.urandom(16).hex())
    # What the programs print, not Ray's forwarded worker output and events
    # (atl's tasks' output is in their logs, not the driver's).
    env.update(RAY_LOG_TO_DRIVER="0", RAY_LOG_TO_DRIVER_EVENT_LEVEL="FATAL")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    nodes = common.RayNodes(ray_bin, env)
    try:
        nodes.start(["--head", "--port", str(port), "--num-cpus", "4", "--node-ip-address",
                     "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats",
                     "--ray-client-server-port", str(_free_port()),
                     "--dashboard-agent-listen-port", str(_free_port()),
                     "--min-worker-port", "0", "--max-worker-port", "0"], address, 1)
        env = dict(env, RAY_ADDRESS=address)
        yield lambda name: _run(python, ["-c", _QUIET_RAY, name + ".py"], env)
    finally:
        nodes.stop()


# The program as it is, with Ray's echo of the cluster's error events (a
# worker that died, a task retried: "(raylet) ..." blocks of many lines, on
# the driver's stdout, whatever log_to_driver says) left out of what it
# prints, as atl leaves them in its event log.
_QUIET_RAY = """
import runpy, sys
import ray._private.worker as worker
worker.listen_error_messages = lambda *args: None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _check(side, name):
    code, out, err, seconds = side(name)
    assert code == 0, f"{name}: exit {code} after {seconds:.1f} s\n{out}\n{err[-3000:]}"
    return out


@pytest.mark.parametrize("name", NAMES)
def test_atl_as_ray(atl_side, name):
    out = _check(atl_side, name)
    assert out == _expected().get(name), f"{name} printed:\n{out}"


@pytest.mark.parametrize("name", NAMES)
def test_ray_itself(ray_side, name):
    # Ray's side checks expected.json against Ray; under a 2-core CI's load
    # Ray itself has raced (a call made right after ray.kill ran): a program
    # that does not print what is expected gets a second run. atl's side
    # gets none.
    code, out, _, _ = ray_side(name)
    if WRITE or code != 0 or out != _expected().get(name):
        out = _check(ray_side, name)
    if WRITE:
        expected = _expected() if os.path.exists(EXPECTED_PATH) else {}
        expected[name] = out
        with open(EXPECTED_PATH, "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
    assert out == _expected().get(name), f"{name} printed:\n{out}"


def test_the_suite_covers_the_guide():
    # At least 50 programs, and every program has its expected output.
    assert len(NAMES) >= 50, len(NAMES)
    assert sorted(_expected()) == NAMES
