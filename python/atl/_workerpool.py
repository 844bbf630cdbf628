"""Warm worker processes for remote functions and actors, as Ray keeps them.

A remote function with no placement (no placement group, pod, env or
working_dir of its own) runs in a long-lived Python process on a worker
instead of a fresh one: atl.init() starts `per_node` of them on every active
worker pod, in the background. Each hosts a named actor
(`atl-pool-<driver>-<n>`) and, once it answers, tells the driver's registry
actor so; a call is then one actor call carrying the function (by value) and
its arguments. An @atl.remote class with no placement takes an idle warm
process and turns it into the actor (it leaves the pool; another is started
in its place). Calls beyond the idle processes wait in the driver, in order.

A worker process that dies (its function killed it, its pod was lost) fails
the call it ran with RemoteError; another is started in its place (on a pod
that refuses it, the slot is dropped: the pool shrinks with lost pods). Three
processes in a row that end before they answer and the pool gives up:
waiting calls fail with the last one's output, and later calls run cold (a
process each).

Warm processes keep their module state between calls (as Ray's workers do).
"""
import collections
import os
import pickle
import sys
import threading
import uuid

from . import _refs
from ._capi import AtlError, GetTimeoutError, UsageError, FAILED
from ._errors import WorkerCrashedError

_CALL_TIMEOUT_MS = 7 * 24 * 3600 * 1000  # a task may run for days; the call waits as long
_MAX_START_FAILURES = 3


class _Worker:
    __slots__ = ("name", "pod", "task", "state", "job")

    def __init__(self, name, pod):
        self.name, self.pod, self.task, self.job = name, pod, None, None
        # starting -> idle <-> busy -> dead | taken; "answered": it said ready
        # before atl.run returned its task (idle once the task is known, so a
        # busy worker always has one to kill).
        self.state = "starting"


class _Job:
    __slots__ = ("request", "future", "label", "cancelled", "pod", "cpus")

    def __init__(self, request, future, label, pod=None, cpus=1.0):
        self.request, self.future, self.label, self.cancelled = request, future, label, False
        self.pod = pod  # the pod its process must be on (its reservation's), or None: any
        self.cpus = cpus  # what it counts against the driver's num_cpus (Ray's default: 1)

    def fits(self, worker):
        return self.pod is None or self.pod == worker.pod


def _kill(worker):
    """Ends a warm process (gone already: nothing to do)."""
    if worker.task is not None:
        try:
            worker.task.kill()
        except AtlError:
            pass


class WorkerPool:
    """The driver's warm processes. `atl` is the package module (its client,
    run() and host_actor()); `per_node` processes on each active worker pod."""

    def __init__(self, atl, per_node, python_path, cpu_limit=None):
        self._atl = atl
        self._per_node = per_node
        # ray.init(num_cpus=n): the CPUs this driver's calls hold at once, at most.
        self._cpu_limit = cpu_limit
        self._running_cpus = 0.0
        self._python_path = python_path
        self._lock = threading.Lock()
        self._idle = collections.deque()
        self._queue = collections.deque()
        self._workers = {}  # name -> _Worker
        self._failures = 0  # failed starts in a row
        self._broken = None  # why the pool gave up
        self._closed = False
        self._serial = 0
        self._prefix = f"atl-pool-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._registry = atl.host_actor(self._prefix, self._on_ready)
        pods = [n["pod"] for n in atl.nodes() if not n.get("unavailable")]
        if not pods:
            raise UsageError(2, "no active worker pod to start warm workers on")
        for pod in pods:
            for _ in range(per_node):
                self._start(pod)

    # --- what the package calls ---------------------------------------------------

    @property
    def broken(self):
        return self._broken

    def idle(self):
        """How many warm processes wait for work now."""
        with self._lock:
            return len(self._idle)

    def has_pod(self, pod):
        """Whether the pool keeps warm processes on `pod`."""
        with self._lock:
            return any(w.pod == pod for w in self._workers.values())

    def submit(self, request, label, pod=None, cpus=1.0):
        """Runs pickle(("run", body, result_to)) on a warm process (see
        atl._worker.pool_worker), on `pod` when given (a call's reservation
        is there); a Future of its value."""
        from concurrent.futures import Future
        future = Future()
        job = _Job(request, future, label, pod, cpus)
        # Futures are settled outside the lock: their callbacks may submit.
        with self._lock:
            broken = self._broken
            if not broken:
                self._queue.append(job)
                self._dispatch()
        if broken:
            future.set_exception(self._error(label, broken))
        return future

    def cancel(self, future):
        """Drops a waiting call, or kills the process running it (it is replaced).
        False when the call is not this pool's or is done."""
        with self._lock:
            queued = next((job for job in self._queue if job.future is future), None)
            if queued is not None:
                self._queue.remove(queued)
        if queued is not None:
            queued.future.set_exception(self._error(queued.label, "cancelled"))
            return True
        with self._lock:
            running = [w for w in self._workers.values()
                       if w.state == "busy" and w.job is not None and w.job.future is future]
            if not running:
                return False
            running[0].job.cancelled = True
            task = running[0].task
        task.kill()
        return True

    def take_idle(self, pod=None):
        """An idle warm process (on `pod` when given), out of the pool for
        good (its replacement starts now), or None when none is idle."""
        with self._lock:
            if self._broken or self._closed:
                return None
            worker = next((w for w in self._idle if pod is None or w.pod == pod), None)
            if worker is None:
                return None
            self._idle.remove(worker)
            worker.state = "taken"
            del self._workers[worker.name]
        self._replace(worker.pod)
        return worker

    def give_back(self, worker):
        """A taken process that did not become an actor after all."""
        with self._lock:
            if self._closed:
                return
            worker.state = "idle"
            self._workers[worker.name] = worker
            self._idle.append(worker)
            self._dispatch()

    def close(self):
        with self._lock:
            self._closed = True
            workers = list(self._workers.values())
            waiting = list(self._queue)
            self._queue.clear()
        for job in waiting:
            job.future.set_exception(self._error(job.label, "the driver shut down"))
        for w in workers:
            _kill(w)
        self._registry.close()

    # --- inside ---------------------------------------------------------------------

    def _error(self, label, why):
        return self._atl.RemoteError(f"{label}: {why}")

    def _start(self, pod):
        with self._lock:
            if self._closed:
                return
            self._serial += 1
            worker = _Worker(f"{self._prefix}-{self._serial}", pod)
            self._workers[worker.name] = worker
        from ._actors import inherited_env, runtime_env
        env = {**inherited_env(),
               "ATL_POOL_REGISTRY": self._prefix, "ATL_POOL_NAME": worker.name,
               "ATL_WORKERS_PER_NODE": "0",  # nested remote calls run cold, no pool per worker
               "PYTHONPATH": self._python_path}
        try:
            where = {"working_dir": runtime_env["working_dir"]} \
                if runtime_env.get("working_dir") else {}  # (the job's, from init())
            task = self._atl.run(f"exec {sys.executable} -m atl._worker pool", pod=pod, env=env,
                                 **where)
        except AtlError:
            # The pod refuses tasks (lost, or the job is ending): this slot is
            # dropped, not retried against it; the other pods' processes go on.
            with self._lock:
                worker.state = "dead"
                self._workers.pop(worker.name, None)
                orphans = self._orphans(pod)
            self._fail(orphans, f"no warm process is left on {pod}, where it was reserved (the "
                                f"pod was lost)")
            return
        with self._lock:
            worker.task = task
            closed = self._closed
            if worker.state == "answered" and not closed:
                self._become_idle(worker)
        if closed:  # close() could not kill what had no task yet
            _kill(worker)
            return
        threading.Thread(target=self._watch, args=(worker,), daemon=True,
                         name=f"atl-pool-watch-{self._serial}").start()

    def _watch(self, worker):
        """Waits for the process's end: a warm process that ends is lost."""
        while True:
            try:
                code = worker.task.wait(timeout=None)
                why = f"its warm worker (task {worker.task.id} on {worker.pod}) ended with {code}"
            except GetTimeoutError:
                if self._closed:  # shut down: the next client (a new atl.init) is not ours
                    return
                continue
            except AtlError as e:
                why = f"its warm worker (task {worker.task.id} on {worker.pod}): {e}"
            break
        if self._closed:
            return
        if worker.state == "starting":
            try:
                tail = worker.task.output()[-1500:]
            except AtlError:
                tail = ""
            why += f"; its output ends: {tail!r}" if tail else ""
        self._lost(worker, why)

    def _on_ready(self, request):
        """The registry: b"ready <name>" from a warm process that answers."""
        name = request.decode("utf-8", "replace").partition(" ")[2]
        with self._lock:
            worker = self._workers.get(name)
            if worker is None or worker.state != "starting":
                return b"unknown"
            if worker.task is None:
                worker.state = "answered"  # _start makes it idle with its task
            else:
                self._become_idle(worker)
        return b"ok"

    def _become_idle(self, worker):
        """A process that answered, with its task known, takes calls (the lock is held)."""
        worker.state = "idle"
        self._failures = 0
        self._idle.append(worker)
        self._dispatch()

    def _lost(self, worker, why):
        with self._lock:
            if worker.state in ("dead", "taken") or self._closed:
                return
            was = worker.state
            worker.state = "dead"
            self._workers.pop(worker.name, None)
            if worker in self._idle:
                self._idle.remove(worker)
            if was == "starting":
                self._failures += 1
                if self._failures >= _MAX_START_FAILURES:
                    self._broken = (f"{_MAX_START_FAILURES} warm workers in a row ended before "
                                    f"they answered; the last: {why}")
                    waiting = list(self._queue)
                    self._queue.clear()
                    broken = self._broken
                else:
                    waiting = None
            else:
                waiting = None
        if waiting is not None:
            self._fail(waiting, broken)
            return
        self._replace(worker.pod)

    def _replace(self, pod):
        """Starts a process in place of one that left, off the caller's thread."""
        threading.Thread(target=self._start, args=(pod,), daemon=True,
                         name="atl-pool-start").start()

    def _orphans(self, pod):
        """Calls waiting for `pod` when the pool has no process left there
        (the pod was lost), out of the queue (the lock is held): _fail them."""
        if any(w.pod == pod for w in self._workers.values()):
            return []
        jobs = [j for j in self._queue if j.pod == pod]
        for job in jobs:
            self._queue.remove(job)
        return jobs

    def _fail(self, jobs, why):
        """Each job's future fails saying why (the lock is not held: a
        future's callbacks may submit again)."""
        for job in jobs:
            job.future.set_exception(self._error(job.label, why))

    def _next_job(self, worker):
        """The first waiting call `worker` can take (the lock is held), taken
        off the queue; None when none is (a cancelled one is dropped)."""
        while True:
            job = next((j for j in self._queue if j.fits(worker)), None)
            if job is None:
                return None
            if self._cpu_limit is not None and self._running_cpus > 0 and \
                    self._running_cpus + job.cpus > self._cpu_limit:
                return None  # the driver's num_cpus are held: calls wait, in order
            self._queue.remove(job)
            if job.future.set_running_or_notify_cancel():
                self._running_cpus += job.cpus
                return job
            # cancelled while it waited: dropped, the next one looked at

    def _dispatch(self):
        """Hands waiting calls to idle processes that can take them, in the
        calls' order (the lock is held)."""
        for worker in list(self._idle):
            if not self._queue:
                return
            job = self._next_job(worker)
            if job is None:
                continue
            self._idle.remove(worker)
            worker.state = "busy"
            worker.job = job
            # A thread of its own per busy process (not the shared call pool: as
            # many processes as nodes x per_node may be busy at once).
            threading.Thread(target=self._serve, args=(worker, job), daemon=True,
                             name="atl-pool-serve").start()

    def _serve(self, worker, job):
        """Runs jobs on `worker` until none waits (on a thread of its own)."""
        while True:
            try:
                reply = self._atl._c().actor_call(worker.name, job.request, _CALL_TIMEOUT_MS)
                outcome = pickle.loads(reply)
            except AtlError as e:
                # The process died under it (or never answered): the call fails, the
                # process is replaced.
                _kill(worker)
                with self._lock:
                    self._running_cpus -= job.cpus
                if job.cancelled:
                    job.future.set_exception(self._error(job.label, "cancelled"))
                elif e.code == FAILED or isinstance(e, UsageError):
                    job.future.set_exception(WorkerCrashedError(
                        f"{job.label}: its warm worker (task {worker.task.id} on {worker.pod}) "
                        f"died while it ran: {e}"))
                else:
                    job.future.set_exception(e)
                self._lost(worker, str(e))
                return
            except Exception as e:  # a reply that does not unpickle
                job.future.set_exception(self._error(job.label, f"unreadable result: {e}"))
                outcome = None
            if outcome is not None:
                try:
                    job.future.set_result(_refs.outcome_value(outcome, job.label))
                except BaseException as e:  # what the function raised, with its type
                    job.future.set_exception(e)
            with self._lock:
                self._running_cpus -= job.cpus
                worker.job = None
                if worker.state != "busy":
                    return
                job = self._next_job(worker)
                if job is None:
                    worker.state = "idle"
                    self._idle.append(worker)
                    self._dispatch()  # CPUs freed: another pod's waiting call may go
                    return
                worker.job = job

