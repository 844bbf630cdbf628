"""`atlctl logs -f` follows a job across its restarts: every line of every
attempt, in order, each attempt's start marked (it used to keep the first
attempt's byte offsets on the next attempt's files and skip their lines)."""
import os
import shutil
import subprocess

from conftest import BIN, Cluster

FAILING = ('echo "line a of attempt $ATL_RESTART_COUNT"; sleep 1; '
           'echo "line b of attempt $ATL_RESTART_COUNT"; sleep 1; '
           'echo "line c of attempt $ATL_RESTART_COUNT"; exit 1')


def test_logs_follow_keeps_every_line_of_every_attempt():
    # Lingering: the follow sees the job end (a head that exits at once cuts
    # a follower off, and atlctl says so).
    c = Cluster(1, entrypoint=FAILING, mode="spmd",
                extra=("--restart-on-failure", "--max-restarts", "2", "--linger", "30s"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        follow = subprocess.run([os.path.join(BIN, "atlctl"), "logs", "-f"], env=c.env,
                                capture_output=True, text=True, timeout=120)
        assert follow.returncode == 0, (follow.stdout, follow.stderr)
        assert c.wait_for("Job status:  failed", timeout=60), c.output()
        lines = follow.stdout.splitlines()
        expected = []
        for attempt in range(3):
            if attempt:
                expected.append("--- attempt %d ---" % (attempt + 1))
            expected += ["[rank 0] line %s of attempt %d" % (x, attempt) for x in "abc"]
        assert lines == expected, follow.stdout
    finally:
        c.stop()
        shutil.rmtree(c.dir, ignore_errors=True)


def test_a_finished_jobs_logs_events_and_status_are_read_from_its_state_dir():
    c = Cluster(1, entrypoint=FAILING, mode="spmd",
                extra=("--restart-on-failure", "--max-restarts", "1"))
    try:
        assert c.wait_for("Job status:  failed", timeout=60), c.output()
    finally:
        c.stop()
    try:
        atlctl = os.path.join(BIN, "atlctl")
        env = {k: v for k, v in c.env.items() if not k.startswith("ATL_")}

        def read(*args):
            return subprocess.run([atlctl, *args], env=env, capture_output=True, text=True,
                                  timeout=30)
        first = read("logs", "--state-dir", c.state, "-r", "0", "--attempt", "1")
        assert first.returncode == 0, first.stderr
        assert first.stdout == "".join("[rank 0] line %s of attempt 0\n" % x for x in "abc"), \
            first.stdout
        last = read("logs", "--state-dir", c.state, "--tail", "1")  # the last attempt's
        assert last.stdout == "[rank 0] line c of attempt 1\n", (last.stdout, last.stderr)
        status = read("status", "--state-dir", c.state)
        assert status.stdout == "Job status:  failed\n", (status.stdout, status.stderr)
        events = read("events", "--state-dir", c.state, "--faults")
        assert "restart" in events.stdout and "exit code 1" in events.stdout, events.stdout
        # Not a state dir: one line saying so, exit 2; nothing made there.
        bad = read("status", "--state-dir", c.dir + "/nowhere")
        assert bad.returncode == 2, (bad.stdout, bad.stderr)
        assert bad.stderr.count("\n") == 1 and "not a head's state dir" in bad.stderr, bad.stderr
        assert not os.path.exists(c.dir + "/nowhere")
        follow = read("logs", "--state-dir", c.state, "-f")
        assert follow.returncode == 2 and "--follow needs the job's head" in follow.stderr, \
            follow.stderr
    finally:
        shutil.rmtree(c.dir, ignore_errors=True)
