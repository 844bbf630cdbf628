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

# Inside the namespace: a job, the guide's commands as printed, the end.
WALK = r"""set -u
cd "$DIR"
headnode --mode "$MODE" --workers 1 --local-workers 1 --port 0 --bind 127.0.0.1 \
  --job-id jo-cleanup --state-dir "$DIR/state" --dashboard-port off --linger 0s \
  -- python3 "$DIR/train.py" > "$DIR/head.out" 2>&1 &
head=$!
for i in $(seq 300); do grep -q "^listening on " "$DIR/head.out" && break; sleep 0.1; done
export ATL_ADDRESS=$(grep "^listening on " "$DIR/head.out" | awk '{print $NF}')
export ATL_TLS_DIR="$DIR/state/tls"
for i in $(seq 300); do grep -q "training, attempt" "$DIR/head.out" && break; sleep 0.1; done
step() { echo "\$ $*"; "$@"; echo "[exit $?]"; }
step atlctl status
step atlctl stop
step atlctl run "$CLEANUP"
step atlctl stop
step atlctl check
step atlctl stop
step atlctl status
step atlctl recover
for i in $(seq 300); do [ "$(grep -c "training, attempt" "$DIR/head.out")" -ge 2 ] && break; sleep 0.1; done
touch "$DIR/go"
wait $head
echo "[head exit $?]"
"""


def walk(mode, cleanup):
    if os.geteuid() != 0 or not shutil.which("unshare") or subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", "true"],
            capture_output=True).returncode != 0:
        pytest.skip("needs root and unshare: the cleanup runs in a PID namespace of its own")
    tmp = tempfile.mkdtemp(prefix="atl-cleanup-")
    try:
        with open(os.path.join(tmp, "train.py"), "w") as f:
            f.write(TRAIN)
        env = dict(os.environ, DIR=tmp, MODE=mode, CLEANUP=cleanup, HOME=tmp,
                   PATH=BIN + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
        r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", WALK],
                           env=env, capture_output=True, text=True, timeout=300)
        head = open(os.path.join(tmp, "head.out")).read()
        return r.stdout + r.stderr, head
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("mode", ["spmd", "driver"])
def test_the_guides_cleanup_line_kills_user_processes_never_the_head(mode):
    said, head = walk(mode, CLEANUP)
    assert "Send command to all workers success." in said, said
    assert "lost the supervisor" not in said, said
    assert "[head exit 0]" in said, (said, head)
    assert "Job status:  succeeded" in head, head
    assert "trained" in head, head


def test_pkill_f_python_kills_user_processes_never_the_head():
    said, head = walk("spmd", "pkill -f python")
    assert "lost the supervisor" not in said, said
    assert "[head exit 0]" in said, (said, head)
    assert "Job status:  succeeded" in head, head
