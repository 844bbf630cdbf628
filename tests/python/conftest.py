"""A live local cluster for the Python package's tests: a driver-mode head
(its own driver parked, so the tests drive it from outside, as a second
driver would) with local workers, real processes on 127.0.0.1, cleaned up
even on failure."""
import faulthandler
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("ATL_BIN_DIR", os.path.join(ROOT, "build", "bin"))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _pid_namespace(pid):
    try:
        return os.readlink("/proc/%s/ns/pid" % pid)
    except OSError:
        return None


def _innermost_pid(pid):
    try:
        for line in open("/proc/%s/status" % pid):
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


# No test may hang the suite: one that runs past this prints every thread's
# stack and ends the run (ctest's 15 minutes would end it later, saying
# nothing about where).
TEST_LIMIT_S = 420


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    faulthandler.dump_traceback_later(TEST_LIMIT_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def host_pid(pod, pid):
    """The host's number of process `pid` of local pod `pod`: where the host
    allows it each local pod runs in a PID namespace of its own (headnode
    --isolate-local-pods), and atl's status and the pod's processes give
    that namespace's numbers."""
    # The pod's newest workernode: a deleted pod's old one may still be
    # leaving beside the one recreated under the same name.
    ns, newest = None, -1
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = open("/proc/%s/cmdline" % entry, "rb").read().split(b"\0")
            started = int(open("/proc/%s/stat" % entry).read().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            continue
        if os.path.basename(args[0]) == b"workernode" and pod.encode() in args and started > newest:
            ns, newest = _pid_namespace(entry), started
    assert ns, "no workernode of pod %s" % pod
    if ns == _pid_namespace("self"):
        return pid  # the pod shares this namespace
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _pid_namespace(entry) == ns and _innermost_pid(entry) == pid:
            return int(entry)
    raise AssertionError("no process %d in pod %s" % (pid, pod))


def workernode_of(pod):
    """The host's pid of local pod `pod`'s newest workernode process."""
    newest, found = -1, None
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
            started = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            continue
        if os.path.basename(args[0]) == b"workernode" and pod.encode() in args and \
                started > newest:
            newest, found = started, int(entry)
    assert found, f"no workernode of pod {pod}"
    return found


# Every Cluster's folder (its state, its head's output, the temp files of
# its pods and ranks: TMPDIR), removed at the session's end, failed tests'
# included, after any head still running is killed with its processes.
_CLUSTERS = []


@pytest.fixture(scope="session", autouse=True)
def _remove_cluster_folders():
    yield
    for cluster in _CLUSTERS:
        if cluster.head.poll() is None:
            try:
                os.killpg(cluster.head.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            cluster.head.wait()
        shutil.rmtree(cluster.dir, ignore_errors=True)


class Cluster:
    def __init__(self, workers, entrypoint="exec sleep 600", extra=(), mode="driver",
                 nproc_per_node=1, local_workers=None, job_id=None, own_home=False,
                 job_file=None):
        self.dir = tempfile.mkdtemp(prefix="atl-py-")
        self.state = os.path.join(self.dir, "state")
        # Clusters of one pytest process share this id unless told otherwise:
        # a test that finds its pods' processes by name gives its own.
        self.job_id = job_id or "jo-py" + str(os.getpid())
        self.out_path = os.path.join(self.dir, "head.out")
        self.out = open(self.out_path, "w")
        env = dict(os.environ)
        # Its pods' folders, and what its ranks leave in their temp dir (a
        # DataLoader's pymp-*, say) when stopped, go with its folder.
        env["TMPDIR"] = self.dir
        env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        # Not /run/atl: the cluster's own, unless it shares a host's with another.
        env["ATL_JOB_FILE"] = job_file or os.path.join(self.dir, "job.json")
        if own_home:
            # A pod's shell reads its image's ~/.bashrc, not this machine's
            # (whose pyenv rehash can wait 60 s on a lock a killed shell left).
            env["HOME"] = self.dir
        self.head = subprocess.Popen(
            [os.path.join(BIN, "headnode"), "--mode", mode, "--workers", str(workers),
             "--nproc-per-node", str(nproc_per_node),
             "--local-workers", str(workers if local_workers is None else local_workers),
             "--port", "0", "--bind", "127.0.0.1",
             "--job-id", self.job_id, "--state-dir", self.state, *extra, "--", entrypoint],
            stdout=self.out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        _CLUSTERS.append(self)
        self.address = None
        deadline = time.time() + 30
        while time.time() < deadline and self.address is None:
            for line in open(self.out_path):
                if line.startswith("listening on "):
                    self.address = line.split()[-1]
            time.sleep(0.02)
        assert self.address, self.output()
        self.tls = os.path.join(self.state, "tls")
        self.env = env

    def line(self, prefix, timeout=30):
        """The first line of the head's output that starts with prefix."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in self.output().splitlines():
                if line.startswith(prefix):
                    return line
            time.sleep(0.05)
        raise AssertionError("no line starting with %r in:\n%s" % (prefix, self.output()))

    def atlctl(self, *args, check=True):
        r = subprocess.run([os.path.join(BIN, "atlctl"), *args], env=self.env,
                           capture_output=True, text=True, timeout=120)
        if check:
            assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
        return r

    def output(self):
        return open(self.out_path).read()

    def wait_for(self, text, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.output():
                return True
            time.sleep(0.05)
        return False

    def wait_exit(self, timeout=120):
        """The head's exit code; a failure with its output if it still runs
        after `timeout` seconds (a bare TimeoutExpired would hide why)."""
        try:
            return self.head.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("the head still runs after %s s; its output:\n%s"
                                 % (timeout, self.output())) from None

    def stop(self):
        if self.head.poll() is None:
            self.head.send_signal(signal.SIGTERM)
            try:
                self.head.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.head.pid, signal.SIGKILL)
                self.head.wait()
        self.out.close()


def connected_cluster(extra=()):
    """A 2-worker driver-mode cluster with this process connected to it (a
    generator for a fixture: disconnected and stopped after)."""
    c = Cluster(2, extra=extra)
    try:
        assert c.wait_for("initializing -> command"), c.output()
        import atl
        atl.init(c.address, c.tls)
        yield c
    finally:
        import atl
        atl.shutdown()
        c.stop()


@pytest.fixture
def cluster():
    yield from connected_cluster()
