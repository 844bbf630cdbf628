"""Actors from @atl.remote classes: method calls straight to the actor's
process (its object server, asked once through the supervisor), with the
supervisor still the judge of liveness: a stopped (hung) host fails a call
within the heartbeat timeout, a killed one at once; max_concurrency on the
direct path; atl.kill from a driver that did not start it. Live cluster."""
import os
import signal
import subprocess
import sys
import time

import pytest

import atl
from conftest import ROOT, connected_cluster, host_pid, workernode_of


@pytest.fixture
def fast_heartbeats():
    yield from connected_cluster(extra=("--heartbeat-timeout", "3s"))


@atl.remote
class Pid:
    def pid(self):
        return os.getpid()

    def host_pid(self):
        """Its pid on this host (its pod's numbers are its own namespace's)."""
        return os.environ["ATL_POD_NAME"], os.getpid()

    def nap(self, seconds):
        time.sleep(seconds)
        return seconds


def test_calls_go_straight_to_the_actors_process(fast_heartbeats):
    a = Pid.remote()
    assert atl.get(a.pid.remote(), timeout=60) > 0
    # Asked once (or handed back by the warm process it took over); the
    # first connection opens in the background, calls meanwhile go through
    # the supervisor; then every call goes there.
    a._connecting.join(30)
    host, port = a._direct.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    listed = {x["name"]: x["calls"] for x in atl.list_actors()}
    for _ in range(20):
        atl.get(a.nap.remote(0), timeout=60)
    # The supervisor carried the one "where" call, not the 21 method calls.
    assert {x["name"]: x["calls"] for x in atl.list_actors()}[a.name] == listed[a.name]


def _state(pid):
    """The process's state letter from /proc (T: stopped), or "gone"."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_hung_actor_fails_a_call_within_the_heartbeat_timeout(fast_heartbeats):
    a = Pid.remote()
    pid = host_pid(*atl.get(a.host_pid.remote(), timeout=60))
    a._connecting.join(30)  # the direct path (the supervisor's says "no answer to a heartbeat")
    os.kill(pid, signal.SIGSTOP)
    try:
        # A group stop completes after kill() returns: wait until the kernel says so.
        deadline = time.monotonic() + 30
        while _state(pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _state(pid) == "T", _state(pid)
        start = time.monotonic()
        with pytest.raises(atl.ActorDiedError) as e:
            value = atl.get(a.nap.remote(0), timeout=60)
            raise AssertionError(f"a stopped actor answered {value!r}; its process {pid} is in "
                                 f"state {_state(pid)}")
        assert "no longer in the job's directory" in str(e.value)
        assert time.monotonic() - start < 30
    finally:
        os.kill(pid, signal.SIGCONT)


def test_an_actor_killed_mid_call_fails_it_and_every_later_one(fast_heartbeats):
    a = Pid.remote()
    pid = host_pid(*atl.get(a.host_pid.remote(), timeout=60))
    a._connecting.join(30)
    ref = a.nap.remote(60)
    time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(atl.ActorDiedError):
        atl.get(ref, timeout=60)
    with pytest.raises(atl.ActorDiedError):
        atl.get(a.nap.remote(0), timeout=60)


def test_max_concurrency_holds_on_the_direct_path(fast_heartbeats):
    @atl.remote(max_concurrency=2)
    class Two:
        def __init__(self):
            import threading
            self.lock, self.now, self.most = threading.Lock(), 0, 0

        def step(self):
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(0.3)
            with self.lock:
                self.now -= 1
            return self.most

    t = Two.remote()
    assert max(atl.get([t.step.remote() for _ in range(6)], timeout=60)) == 2


def test_kill_from_a_driver_that_did_not_start_it(fast_heartbeats):
    a = Pid.options(name="shared").remote()
    pid = host_pid(*atl.get(a.host_pid.remote(), timeout=60))
    code = ("import atl; atl.init(); atl.kill(atl.get_actor('shared')); atl.shutdown()")
    env = dict(fast_heartbeats.env, ATL_ADDRESS=fast_heartbeats.address,
               ATL_TLS_DIR=fast_heartbeats.tls, PYTHONPATH=os.path.join(ROOT, "python"))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
    with pytest.raises(atl.ActorDiedError):
        atl.get(a.pid.remote(), timeout=60)


def test_a_detached_actor_comes_back_when_its_pod_is_deleted_with_sigterm(fast_heartbeats):
    # The pod deleted as Kubernetes deletes one (its workernode SIGTERMed):
    # the head starts the detached actor again (Ray's GCS would), on a pod
    # in the job; calls find the new process; atl.kill ends it for good.
    a = Pid.options(name="survivor", lifetime="detached", max_restarts=-1).remote()
    pod, pid = atl.get(a.host_pid.remote(), timeout=60)
    os.kill(workernode_of(pod), signal.SIGTERM)
    deadline = time.monotonic() + 60
    while True:
        try:
            now = atl.get(a.host_pid.remote(), timeout=30)
            if now != (pod, pid):
                break
        except atl.ActorDiedError:
            pass  # (its old process, or none yet)
        assert time.monotonic() < deadline, "the detached actor did not come back"
        time.sleep(0.1)
    reconstructed = atl.remote(lambda: None)  # (a plain call still runs: the job goes on)
    assert atl.get(reconstructed.remote(), timeout=60) is None
    atl.kill(a)
    with pytest.raises(atl.ActorDiedError):
        atl.get(a.pid.remote(), timeout=60)
    time.sleep(2)
    assert "survivor" not in atl.util.list_named_actors()


def test_once_kill_returns_its_name_is_free_for_get_actor_and_a_new_actor(cluster):
    # As after Ray's kill: get_actor finds no actor under the name, a new
    # actor takes it and answers, and the killed one's handles still fail.
    for detached in (False, True):
        old = Pid.options(name="reused", lifetime="detached" if detached else None).remote()
        atl.get(old.pid.remote(), timeout=60)
        atl.kill(old)
        with pytest.raises(ValueError):
            atl.get_actor("reused")
        new = Pid.options(name="reused").remote()
        assert atl.get(new.nap.remote(0), timeout=60) == 0
        assert atl.get(atl.get_actor("reused").nap.remote(0), timeout=60) == 0
        with pytest.raises(atl.ActorDiedError):
            atl.get(old.pid.remote(), timeout=60)
        atl.kill(new)
