"""The warm pool's own interleavings, which a live cluster shows only by
chance: here the pool's transport (atl.run, the actor calls) is a stand-in
that orders events as the test says. What the pool does with real processes
is tested against a live cluster in test_api.py."""
import threading

from atl._capi import AtlError, FAILED
from atl._workerpool import WorkerPool


class _Task:
    def __init__(self):
        self.id = 1
        self.killed = threading.Event()

    def kill(self):
        self.killed.set()

    def wait(self, timeout=None):
        self.killed.wait()
        return -15

    def output(self):
        return ""


class _Client:
    def __init__(self, atl):
        self._atl = atl

    def actor_call(self, name, request, timeout_ms):
        self._atl.called.set()
        self._atl.task.killed.wait(30)  # "runs" until its process is killed
        raise AtlError(FAILED, f"actor {name}'s host died")


class _Registry:
    def close(self):
        pass


class _Atl:
    """The package as the pool sees it: one pod, and a process that says
    "ready" before atl.run has returned its task (as a fast one did in CI)."""

    class RemoteError(Exception):
        pass

    def __init__(self):
        self.task = _Task()
        self.called = threading.Event()
        self.ready = None
        self.before_run_returns = None

    def host_actor(self, name, handler):
        self.ready = handler
        return _Registry()

    def nodes(self):
        return [{"pod": "jo-t-worker-0"}]

    def run(self, command, pod, env):
        assert self.ready(f"ready {env['ATL_POOL_NAME']}".encode()) == b"ok"
        if self.before_run_returns:
            self.before_run_returns()
        return self.task

    def _c(self):
        return _Client(self)


def test_a_call_cancelled_while_its_process_starts_is_dropped():
    # CI: cancel() found a busy worker with no task and raised AttributeError
    # ('NoneType' object has no attribute 'kill'): the process had said
    # "ready" and taken a call before atl.run returned its id.
    atl = _Atl()
    pool = WorkerPool(atl, 0, "")  # no process yet: the test starts the one it orders
    seen = {}

    def submit_and_cancel():
        seen["future"] = pool.submit(b"request", "nap.remote")
        seen["cancelled"] = pool.cancel(seen["future"])

    atl.before_run_returns = submit_and_cancel
    pool._start("jo-t-worker-0")
    assert seen["cancelled"] is True
    try:
        seen["future"].result(30)
        raise AssertionError("a cancelled call returned")
    except atl.RemoteError as e:
        assert "cancelled" in str(e)
    assert pool.idle() == 1, "the process takes calls once its task is known"
    assert not atl.called.is_set()
    pool.close()
    assert atl.task.killed.is_set()


def test_a_running_call_is_cancelled_by_killing_its_process():
    atl = _Atl()
    pool = WorkerPool(atl, 1, "")
    future = pool.submit(b"request", "nap.remote")
    assert atl.called.wait(30), "the call never reached the process"
    assert pool.cancel(future) is True
    assert atl.task.killed.is_set()
    try:
        future.result(30)
        raise AssertionError("a cancelled call returned")
    except atl.RemoteError as e:
        assert "cancelled" in str(e)
    pool.close()
