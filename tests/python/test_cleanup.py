"""The guide's own commands never hurt atl: its walkthrough 1 (status, stop,
the cleanup line, stop, check, stop, recover) and `pkill -f python`, run as
printed against a job whose entrypoint (a Python program) is on the head's
command line, on one host. The head, the nodes and their guards carry no
user command in their titles, so the cleanup kills user processes only and
the job recovers and succeeds.

Each case runs in a PID namespace of its own (unshare, as root), where the
cleanup's `ps -ef` sees that namespace only: nothing else on the machine can
be hit, and nothing outlives the case (its init's end kills the rest)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import BIN

CLEANUP = "ps -ef |grep python |grep -v grep |grep -v tini |awk '{print $2}'|xargs kill -9"  # as atlctl receives it

# Trains until told to finish (a file), in every attempt.
TRAIN = """import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
print("training, attempt", os.environ.get("ATL_RESTART_COUNT"), flush=True)
while not os.path.exists(os.path.join(here, "go")):
    time.sleep(0.2)
print("trained", flush=True)
"""

# Job B, beside job A on the same host: what its pod sees, then training
# until told to finish. A's cleanup must never reach it.
TRAIN_B = """import os, sys, tempfile, time
here = os.path.dirname(os.path.abspath(__file__))
first = open("/proc/1/cmdline").read().split(chr(0))[0]
print("B pid1", os.path.basename(first), "tmp", tempfile.gettempdir(), flush=True)
open(os.path.join(tempfile.gettempdir(), "scratch"), "w").write("x")
print("B training, attempt", os.environ.get("ATL_RESTART_COUNT"), flush=True)
while not os.path.exists(os.path.join(here, "go-b")):
    time.sleep(0.2)
print("B trained", flush=True)
"""

# Inside the namespace: job B, then job A and the guide's commands as
# printed, A's end, then B's.
WALK = r"""set -u
cd "$DIR"
headnode --mode spmd --workers 1 --local-workers 1 --port 0 --bind 127.0.0.1 \
  --job-id jo-beside --state-dir "$DIR/state-b" --dashboard-port off --linger 0s \
  -- python3 "$DIR/train_b.py" > "$DIR/head-b.out" 2>&1 &
head_b=$!
for i in $(seq 1200); do grep -q "B training, attempt" "$DIR/head-b.out" && break; sleep 0.1; done
headnode --mode "$MODE" $EXTRA --workers 1 --local-workers 1 --port 0 --bind 127.0.0.1 \
  --job-id jo-cleanup --state-dir "$DIR/state" --dashboard-port off --linger 0s \
  -- python3 "$DIR/train.py" > "$DIR/head.out" 2>&1 &
head=$!
for i in $(seq 1200); do grep -q "^listening on " "$DIR/head.out" && break; sleep 0.1; done
export ATL_ADDRESS=$(grep "^listening on " "$DIR/head.out" | awk '{print $NF}')
export ATL_TLS_DIR="$DIR/state/tls"
for i in $(seq 1200); do grep -q "training, attempt" "$DIR/head.out" && break; sleep 0.1; done
step() { echo "\$ $*"; "$@"; echo "[exit $?]"; }
step atlctl status
step atlctl stop
step atlctl run "$CLEANUP"
step atlctl stop
step atlctl check
step atlctl stop
step atlctl status
# As the guide's user does when told to: recover again while what the stop
# (or Ray's teardown after the cleanup) ends is still in its grace.
recover() {
  for i in $(seq 60); do
    out=$(atlctl recover 2>&1); rc=$?
    case "$out" in *"retry recover in a moment"*) sleep 0.5 ;; *) break ;; esac
  done
  echo "$out"; return $rc
}
step recover
for i in $(seq 1200); do [ "$(grep -c "training, attempt" "$DIR/head.out")" -ge 2 ] && break; sleep 0.1; done
touch "$DIR/go"
wait $head
echo "[head exit $?]"
touch "$DIR/go-b"
wait $head_b
echo "[B exit $?]"
"""


def in_own_namespace(script, files, env, timeout):
    """Runs `script` (bash) in a PID namespace of its own, in a temp dir
    ($DIR) holding `files` (name -> text), with `env` added; what it said,
    and the heads' outputs it left in head.out and head-b.out."""
    if os.geteuid() != 0 or not shutil.which("unshare") or subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", "true"],
            capture_output=True).returncode != 0:
        pytest.skip("needs root and unshare: the cleanup runs in a PID namespace of its own")
    tmp = tempfile.mkdtemp(prefix="atl-cleanup-")
    try:
        for name, text in files.items():
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        env = dict(os.environ, DIR=tmp, HOME=tmp, **env,
                   PATH=BIN + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
        # --kill-child: a walk past its time takes its whole namespace with it
        # (else its heads keep the output pipes open and the run never returns).
        r = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "bash",
                            "-c", script],
                           env=env, capture_output=True, text=True, timeout=timeout)
        head = open(os.path.join(tmp, "head.out")).read()
        beside = open(os.path.join(tmp, "head-b.out")).read()
        return r.stdout + r.stderr, head, beside
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def walk(mode, cleanup, extra=""):
    # Each wait inside is up to 120 s: a Ray cluster starts slowly beside the
    # rest of the suite on 2 cores.
    return in_own_namespace(WALK, {"train.py": TRAIN, "train_b.py": TRAIN_B},
                            {"MODE": mode, "CLEANUP": cleanup, "EXTRA": extra}, 380)


def ray_extra(mode):
    """headnode's flags for `mode`: ray mode needs the Ray venv's `ray`."""
    if mode != "ray":
        return ""
    ray = os.path.join(os.path.dirname(BIN), "ray-venv", "bin", "ray")
    if not os.path.exists(ray):
        pytest.skip("no Ray venv (build/ray-venv, made by the Ray tests)")
    return "--ray-bin " + ray


# Ray mode: the cleanup kills the pod's Python processes, Ray's own among
# them; recover runs the driver again and it runs to its end.
@pytest.mark.parametrize("mode", ["spmd", "driver", "ray"])
def test_the_guides_cleanup_line_kills_user_processes_never_the_head(mode):
    said, head, beside = walk(mode, CLEANUP, ray_extra(mode))
    assert "Send command to all workers success." in said, said
    assert "lost the supervisor" not in said, said
    assert "[head exit 0]" in said, (said, head)
    assert "Job status:  succeeded" in head, head
    assert "trained" in head, head
    the_job_beside_is_untouched(said, beside)


@pytest.mark.parametrize("mode", ["spmd", "driver", "ray"])
def test_pkill_f_python_kills_user_processes_never_the_head(mode):
    said, head, beside = walk(mode, "pkill -f python", ray_extra(mode))
    assert "lost the supervisor" not in said, said
    assert "[head exit 0]" in said, (said, head)
    assert "Job status:  succeeded" in head, head
    the_job_beside_is_untouched(said, beside)


def the_job_beside_is_untouched(said, beside):
    """Job B ran through A's cleanup in one attempt: its pod is a PID
    namespace of its own (its PID 1 the pod's workernode, as a container's is
    its init), which A's `ps -ef`/`pkill` cannot see; its temp dir was the
    pod's own, gone with the job."""
    assert "[B exit 0]" in said, (said, beside)
    assert beside.count("B training, attempt") == 1, beside
    assert "B trained" in beside, beside
    line = [x for x in beside.splitlines() if "B pid1 " in x][0]
    words = line.split()
    assert words[words.index("pid1") + 1] == "workernode", line
    tmp = words[words.index("tmp") + 1]
    assert os.path.basename(tmp).startswith("atl-pod-"), line
    assert not os.path.exists(tmp), tmp + " outlived its pod"


# Job B's driver, on its head beside job A's: in ray mode it uses its Ray
# once A's cleanup has run, so Ray's own head processes must have survived.
DRIVER_B = """import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
first = open("/proc/1/cmdline").read().split(chr(0))
print("B pid1", os.path.basename(first[0]), " ".join(first[1:]), flush=True)
ray = None
if sys.argv[1:] == ["ray"]:
    import ray
    ray.init()
print("B driving", flush=True)
while not os.path.exists(os.path.join(here, "go-b")):
    time.sleep(0.2)
if ray:
    @ray.remote
    def square(x):
        return x * x
    print("B ray says", ray.get(square.remote(7)), flush=True)
print("B drove", flush=True)
"""

# Job B (driver or ray mode), then job A whose driver runs the guide's
# cleanup line and `pkill -f python` beside itself on the same host, as a
# user in the head pod's shell would, then B's end.
BESIDE_DRIVER = r"""set -u
cd "$DIR"
headnode --mode "$MODE_B" $EXTRA --workers 1 --local-workers 1 --port 0 --bind 127.0.0.1 \
  --job-id jo-beside --state-dir "$DIR/state-b" --dashboard-port off --linger 0s \
  -- $PY_B "$DIR/driver_b.py" $MODE_B > "$DIR/head-b.out" 2>&1 &
head_b=$!
for i in $(seq 1200); do grep -q "B driving" "$DIR/head-b.out" && break; sleep 0.1; done
headnode --mode driver --workers 1 --local-workers 1 --port 0 --bind 127.0.0.1 \
  --job-id jo-cleaner --state-dir "$DIR/state" --dashboard-port off --linger 0s \
  -- bash "$DIR/clean.sh" > "$DIR/head.out" 2>&1
echo "[head exit $?]"
touch "$DIR/go-b"
wait $head_b
echo "[B exit $?]"
"""


@pytest.mark.parametrize("mode_b", ["driver", "ray"])
def test_the_cleanup_beside_a_driver_reaches_its_own_jobs_processes_only(mode_b):
    """The head's own processes (driver, Ray's head) are a pod of their own
    too: a cleanup run beside job A's driver sees A's head pod only, and job
    B's driver and Ray on the same host run on (before: B's driver, a
    Python process in the host's namespace, was SIGKILLed)."""
    extra, py_b = "", "python3"
    if mode_b == "ray":
        extra = ray_extra(mode_b)
        py_b = os.path.join(os.path.dirname(BIN), "ray-venv", "bin", "python")
    clean = ("echo '[ps]'; ps -ef; echo '[/ps]'\n" + CLEANUP + "\npkill -f python\n"
             "echo cleaned\n")
    said, head, beside = in_own_namespace(
        BESIDE_DRIVER, {"driver_b.py": DRIVER_B, "clean.sh": clean},
        {"MODE_B": mode_b, "EXTRA": extra, "PY_B": py_b}, 300)
    assert "[head exit 0]" in said, (said, head)
    seen = head[head.index("[ps]"):head.index("[/ps]")]
    assert "cleaned" in head, head
    # A's driver sees its own pod: its init, its guard, itself, no head.
    assert "atl-guard --pod-init" in seen, seen
    assert "headnode" not in seen and "workernode" not in seen, seen
    assert "driver_b" not in seen and "raylet" not in seen, seen
    assert "[B exit 0]" in said, (said, beside)
    assert "B drove" in beside, beside
    assert "B pid1 atl-guard --pod-init" in beside, beside
    if mode_b == "ray":
        assert "B ray says 49" in beside, beside
