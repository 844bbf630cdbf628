"""atl for Python drivers: the job's workers, placement groups and tasks, with
Ray's shapes and no Ray installed (ctypes over libatl.so, standard library only).

    import atl
    atl.init()                                   # $ATL_ADDRESS, as in a job's driver
    pg = atl.placement_group([{"CPU": 1}] * 2, strategy="STRICT_SPREAD")
    pg.ready(timeout=30)

    @atl.remote
    def where(x):
        import os
        return os.environ["ATL_POD_NAME"], x * x

    refs = [where.options(placement_group=pg, placement_group_bundle_index=i).remote(i)
            for i in range(2)]
    print(atl.get(refs))

A remote function runs on a worker, given by value, its arguments pickled
(at most ~768 KiB), its return value pickled back (at most ~6 MiB). With no
placement of its own it runs in one of the driver's warm processes (started
at the first call, `workers_per_node` on each worker; see atl._workerpool), else
as a task: a fresh Python process (the driver's interpreter path) in its
bundle or on its pod. atl.run() starts a plain command instead.
"""
import atexit
import base64
import json
import os
import pickle
import sys
import threading
import time

from ._capi import (FAILED, USAGE, AtlError, Client, GetTimeoutError, RefusedError, UnreachableError,
                    UsageError)
from . import _objects, _options, _refs, _serialize
from ._errors import ActorDiedError, OwnerDiedError, RemoteError, TaskError
from ._refs import ActorRef, ObjectRef, put

__all__ = ["progress", "init", "shutdown", "is_initialized", "job_info", "cluster_state", "nodes",
           "cluster_resources", "available_resources", "placement_group",
           "remove_placement_group", "PlacementGroup", "remote", "get", "wait", "run", "Task",
           "ObjectRef", "AtlError", "UsageError", "RefusedError", "UnreachableError",
           "GetTimeoutError", "RemoteError", "TaskError", "ActorDiedError", "OwnerDiedError",
           "host_actor", "get_actor", "kill", "list_actors", "cancel", "put"]

# A call travels in the task's environment, in pieces (Linux takes 128 KiB
# per variable): inline when small, else as a ref to the caller's object.
_CHUNK = 96 * 1024


def progress():
    """Tells atl's hang watch that this rank made progress (a training step
    ended, say), for ranks that print rarely: it touches $ATL_PROGRESS_FILE,
    which atl gives every rank of an spmd job. No connection needed; False
    when not run by atl."""
    path = os.environ.get("ATL_PROGRESS_FILE")
    if not path:
        return False
    try:
        os.utime(path)
    except FileNotFoundError:
        open(path, "a").close()
    return True


def _payload_env(prefix, payload):
    """`payload` as PREFIX_0.. PREFIX_<n-1> and PREFIX_PARTS=n (see _worker.take_payload)."""
    chunks = [payload[i:i + _CHUNK] for i in range(0, len(payload), _CHUNK)] or [""]
    env = {f"{prefix}_{k}": chunk for k, chunk in enumerate(chunks)}
    env[f"{prefix}_PARTS"] = str(len(chunks))
    return env


_client = None
_lock = threading.Lock()
_workers_per_node = None
_warm = None  # the WorkerPool, once the first call needs it; False: none (cold calls)


def _default_workers_per_node():
    text = os.environ.get("ATL_WORKERS_PER_NODE", "")
    if not text:
        return None  # each node's CPUs, at most 8
    try:
        value = int(text)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        raise UsageError(2, f"ATL_WORKERS_PER_NODE={text!r}: expected a whole number >= 0") \
            from None


def init(address=None, tls_dir=None, insecure=False, workers_per_node=None, **ray_options):
    """Connects to the job's supervisor ($ATL_ADDRESS and $ATL_TLS_DIR by
    default, as every driver and rank has them). Calling it again is a no-op.
    workers_per_node: warm Python processes per worker node for remote calls
    with no placement (default $ATL_WORKERS_PER_NODE, else the node's CPUs, at
    most 8; 0: a fresh process per call). Ray's other init() options are
    refused with a TypeError naming them (never ignored)."""
    global _client, _workers_per_node
    if ray_options:
        name = sorted(ray_options)[0]
        raise TypeError(f"atl.init: option {name!r} is not supported: atl.init takes address, "
                        f"tls_dir, insecure and workers_per_node (the job's pods and their "
                        f"resources are the cluster); {_options.RAY_MODE}")
    if workers_per_node is not None and (not isinstance(workers_per_node, int)
                                         or workers_per_node < 0):
        raise UsageError(2, f"workers_per_node={workers_per_node!r}: expected an int >= 0")
    with _lock:
        if _client is not None:
            return _client
        per_node = workers_per_node
        if per_node is None:
            per_node = _default_workers_per_node()
        _client = Client(address, tls_dir, insecure)
        _objects.configure(address, tls_dir, insecure)
        _workers_per_node = per_node
        client = _client
    if per_node != 0:
        # Warm processes start now, in the background, as Ray's are up before
        # a driver connects; the first remote call waits for them if need be.
        threading.Thread(target=_start_warm_pool, daemon=True, name="atl-pool-init").start()
    return client


def _at_exit():
    """A driver that never called shutdown(): its warm processes end with it."""
    try:
        shutdown()
    except Exception:
        pass


atexit.register(_at_exit)


def _start_warm_pool():
    try:
        _warm_pool()
    except AtlError:
        pass  # the first remote call says why (it retries)


def shutdown():
    """Disconnects; the actors this driver started end, but for detached ones."""
    global _client, _warm
    if _client is not None:
        _kill_owned_actors()
    with _lock:
        pool, _warm = _warm, None
    if pool:
        pool.close()
    with _lock:
        if _client is not None:
            _client.close()
            _client = None


def is_initialized():
    return _client is not None


def _c():
    if _client is None:
        raise UsageError(2, "atl is not initialized: call atl.init() first")
    return _client


def _ms(timeout):
    return 0 if timeout is None else max(0, int(timeout * 1000))


# timeout=None means no deadline: a call that cannot be split waits this long.
_FOREVER_MS = 30 * 24 * 3600 * 1000
# A get(timeout=None) asks in pieces this long, so Ctrl-C ends it within one.
_GET_PIECE_MS = 1000


def job_info():
    """The job as `atlctl status --json` shows it."""
    return json.loads(_c().job_info())


def cluster_state():
    """Nodes (total/reserved/available resources), groups, pending demand."""
    return json.loads(_c().cluster_state())


def nodes():
    """Every worker node: pod, node, address, total/reserved/available, and
    `unavailable` (why it takes no bundle) when it takes none."""
    return cluster_state()["nodes"]


def _sum(kind):
    out = {}
    for n in nodes():
        for k, v in n[kind].items():
            out[k] = out.get(k, 0) + v
    return out


def cluster_resources():
    return _sum("total")


def available_resources():
    return _sum("available")


# --- placement groups -----------------------------------------------------------


_RAY_READY = object()  # pg.ready() with no timeout: Ray's ref


class PlacementGroup:
    """Reserved bundles of resources on the workers (Ray's semantics)."""

    def __init__(self, gid, bundles, strategy, table=None):
        self.id = gid
        self.bundle_specs = bundles
        self.strategy = strategy
        # Placed at once: ready() has nothing to wait for.
        self._table = table if table and table.get("state") == "CREATED" else None

    @property
    def bundle_count(self):
        return len(self.bundle_specs)

    def ready(self, timeout=_RAY_READY):
        """pg.ready(): an ObjectRef of the group once every bundle is reserved
        (Ray's: atl.get or atl.wait it). pg.ready(timeout=seconds) (None: no
        limit) waits here instead and returns the group: GetTimeoutError while
        still pending (the message says which bundle lacks what where),
        AtlError when it failed or was removed."""
        if timeout is _RAY_READY:
            future = _refs.new_future()

            def wait():
                try:
                    future.set_result(self.ready(None))
                except BaseException as e:
                    future.set_exception(e)
            threading.Thread(target=wait, daemon=True, name="atl-pg-ready").start()
            return ObjectRef(f"placement group {self.id} ready", _refs._Call(future))
        if self._table is not None:
            return self
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = 60.0 if left is None else min(left, 60.0)
            try:
                self._table = json.loads(_c().pg_wait(self.id, _ms(step) or 1))
                return self
            except GetTimeoutError:
                if left is not None and left <= step:
                    raise

    def wait(self, timeout_seconds=30):
        """True once placed, False if still pending after the timeout."""
        try:
            self.ready(timeout=timeout_seconds)
            return True
        except GetTimeoutError:
            return False

    @property
    def bundle_nodes(self):
        """The pod of each bundle (after ready())."""
        if self._table is None:
            self.ready(timeout=0.001)
        return list(self._table["nodes"])

    def remove(self, wait=False):
        """Frees the group's bundles (its tasks end). Sent in the background,
        in order, so a loop of create/remove does not wait for each removal;
        a removal's error is raised by this driver's next placement call (or
        here with wait=True, which returns once it is done)."""
        done = _removals.put(self.id)
        _removals.raise_failed()
        if wait:
            done.result()
            _removals.raise_failed()

    def __repr__(self):
        return f"PlacementGroup(id={self.id}, strategy={self.strategy}, bundles={self.bundle_specs})"


class _Removals:
    """Placement groups to remove, one after another on a thread of their
    own; the first error kept for the driver's next placement call."""

    def __init__(self):
        import queue
        self._queue = queue.Queue()
        self._thread = None
        self._failed = None
        self._lock = threading.Lock()

    def put(self, gid):
        done = _refs.new_future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="atl-pg-remove")
                self._thread.start()
        self._queue.put((gid, done))
        return done

    def _run(self):
        while True:
            gid, done = self._queue.get()
            try:
                _c().pg_remove(gid)
            except AtlError as e:
                with self._lock:
                    if self._failed is None:
                        self._failed = type(e)(e.code, f"removing placement group {gid}: {e}")
            done.set_result(None)

    def raise_failed(self):
        with self._lock:
            failed, self._failed = self._failed, None
        if failed is not None:
            raise failed


_removals = _Removals()


def placement_group(bundles, strategy="PACK", name="", timeout=None):
    """Asks for `bundles` (a list of {"CPU": 1, "GPU": 1, "memory": bytes,
    "custom": n}) placed by `strategy`: PACK, SPREAD, STRICT_PACK or
    STRICT_SPREAD. Returns at once; `.ready()` waits. A group still pending
    after `timeout` seconds fails (None: it waits for ever). An earlier
    removal's error is raised here."""
    _removals.raise_failed()
    gid, table = _c().pg_create(name, strategy, json.dumps(list(bundles)), _ms(timeout))
    return PlacementGroup(gid, list(bundles), strategy, json.loads(table) if table else None)


def remove_placement_group(pg):
    pg.remove()


# --- tasks ------------------------------------------------------------------------


class Task:
    """A command running on a worker (atl.run), or a remote function's process."""

    def __init__(self, tid):
        self.id = tid
        self._offset = 0

    def wait(self, timeout=None):
        """Its exit code (negative: killed by that signal); GetTimeoutError if
        it still runs after `timeout` seconds; AtlError if it never ran or its
        pod was lost."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = 60.0 if left is None else min(left, 60.0)
            try:
                code, sig = _c().task_wait(self.id, _ms(step))
                return -sig if sig else code
            except GetTimeoutError:
                if left is not None and left <= step:
                    raise

    def done(self):
        try:
            self.wait(0)
            return True
        except GetTimeoutError:
            return False

    def output(self):
        """Everything it wrote so far (stdout and stderr), as text."""
        chunks, offset = [], 0
        while True:
            data, offset = _c().task_output(self.id, offset)
            if not data:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(data)

    def read_new(self):
        """What it wrote since the last read_new() (line by line as it goes)."""
        chunks = []
        while True:
            data, self._offset = _c().task_output(self.id, self._offset)
            if not data:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(data)

    def kill(self):
        _c().task_kill(self.id)


def run(command, placement_group=None, bundle_index=0, pod=None, env=None, working_dir=None):
    """Starts a shell command on a worker: in a bundle of `placement_group`, on
    `pod`, or (neither) on the least busy worker. Returns once it runs."""
    gid = placement_group.id if placement_group is not None else 0
    return Task(_c().task_start(command, gid, bundle_index if gid else -1, pod, env, working_dir))


def _warm_pool():
    """The driver's warm processes (started by init()), or None: then a call
    runs cold (its own process), and its refusal, if any, says why."""
    global _warm
    _c()
    with _lock:
        if _warm is None:
            per_node = _workers_per_node
            try:
                if per_node is None:
                    cpus = [n["total"].get("CPU", 1) for n in nodes() if not n.get("unavailable")]
                    per_node = max(1, min(8, int(min(cpus)) if cpus else 1))
                if per_node == 0 or job_info().get("mode") != "driver":
                    _warm = False  # tasks (and so warm processes) are a driver-mode job's
                else:
                    from ._workerpool import WorkerPool
                    _warm = WorkerPool(sys.modules[__name__], per_node, _python_path())
            except AtlError:
                return None  # no active worker yet, say: the next call tries again
        pool = _warm
    return pool if pool and not pool.broken else None


def _placed(options):
    """Whether a call's options ask for a place or a process of its own."""
    return any(options.get(k) for k in ("placement_group", "pod", "env", "working_dir", "spread",
                                        "demand"))


def _fits(need, have):
    return all(have.get(k, 0) >= v for k, v in need.items())


def _check_feasible(o, label):
    """A call's resource counts against what can ever hold them: a pod's
    total (every pod of the job, lost ones too), or its placement group's
    bundle. UsageError saying why when nothing can: such a call would wait
    for ever (Ray warns and waits; atl's pods are the job's, fixed)."""
    need = o["demand"]
    pg = o.get("placement_group")
    if pg is not None:
        index = o.get("placement_group_bundle_index")
        bundles = pg.bundle_specs if index is None else [pg.bundle_specs[index]]
        if not all(_fits(need, b) for b in bundles):
            raise UsageError(USAGE, f"{label}: {need} does not fit bundle "
                                    f"{'s' if index is None else index} of {pg!r}")
        return
    totals = [(n["pod"], n["total"]) for n in nodes()]
    if not any(_fits(need, total) for _, total in totals):
        largest = ", ".join(f"{pod} has {total}" for pod, total in totals[:4]) or "no pod joined"
        raise UsageError(USAGE, f"{label}: no pod of this job can ever hold {need} "
                                f"(infeasible: {largest})")


def _reserve(need, source, label, timeout=None):
    """A one-bundle placement group holding `need`, once a pod can (PACK):
    the call's own reservation, removed when it ends. While it waits,
    source.why says what for (a get that times out says it)."""
    pg = placement_group([need], strategy="PACK")
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            if source is not None and source.cancelled:
                raise RemoteError(f"{label}: cancelled while it waited for {need}")
            step = 1.0 if deadline is None else max(0.001, min(1.0, deadline - time.monotonic()))
            try:
                pg.ready(timeout=step)
                return pg
            except GetTimeoutError as e:
                why = f"waiting for a pod that can hold {need}: {e}"
                if source is not None:
                    source.why = why
                if deadline is not None and time.monotonic() >= deadline:
                    raise GetTimeoutError(5, f"{label}: {why}") from None
    except BaseException:
        _remove_quietly(pg)
        raise


def _remove_quietly(pg):
    try:
        _removals.put(pg.id)
    except AtlError:
        pass  # the job is ending, or the group went with its node


def _system_failure(e):
    """A process that died, a pod that was lost: what max_retries reruns for."""
    return isinstance(e, AtlError) and not isinstance(
        e, (TaskError, UsageError, GetTimeoutError, OwnerDiedError))


_turns = {}  # what is taken in turn ("spread", a group's bundles) -> the next index
_turns_lock = threading.Lock()


def _next_in_turn(key, count):
    with _turns_lock:
        i = _turns.get(key, 0) % count
        _turns[key] = i + 1
        return i


def _where(o):
    """(placement group, bundle index, pod) of a call with options `o`: a
    group's bundle (index None: its bundles in turn), the next worker pod in
    turn for scheduling_strategy="SPREAD", or the pod it names."""
    pg = o.get("placement_group")
    if pg:
        index = o.get("placement_group_bundle_index", 0)
        if index is None:
            index = _next_in_turn(("bundle", pg.id), pg.bundle_count)
        return pg, index, o.get("pod")
    if o.get("spread") and not o.get("pod"):
        pods = sorted(n["pod"] for n in nodes() if not n.get("unavailable"))
        if pods:
            return None, 0, pods[_next_in_turn("spread", len(pods))]
    return None, 0, o.get("pod")


def _retries_on(o, e):
    """Whether retry_exceptions reruns a call that raised `e` (a TaskError)."""
    which = o.get("retry_exceptions")
    if which is True:
        return True
    return bool(which) and isinstance(e.cause, which)


def cancel(ref):
    """Stops a remote function call: a waiting one is dropped, a running one's
    process killed (and not retried). atl.get(ref) then raises RemoteError."""
    if not isinstance(ref, ObjectRef):
        raise UsageError(2, f"cancel: {ref!r} is not an ObjectRef")
    source = ref._source
    if getattr(source, "inner", None) is not None or hasattr(source, "cancelled"):
        source.cancelled = True
        inner = getattr(source, "inner", None)
        if inner is not None:
            cancel(inner)
        return
    if ref.task is not None:
        ref.task.kill()
    elif _warm and ref._future is not None:
        _warm.cancel(ref._future)


def _python_path():
    # The package itself, then the driver's own path: functions of the
    # driver's modules travel by reference and import there as here (pods
    # share the image; a job's working_dir is the same on every pod).
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [here] + [p for p in sys.path if p and os.path.isdir(p)]
    return os.pathsep.join(dict.fromkeys(parts))


class RemoteFunction:
    def __init__(self, fn, options, checked=False):
        self._fn = fn
        self._atl_remote_function = fn  # how _serialize knows one (to send it by value)
        self._desc = None
        self.__name__ = getattr(fn, "__name__", "remote")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._options = options if checked else _options.check(
            options, f"remote function {self.__name__}", actor=False)
        self.__name__ = self._options.get("name", self.__name__)

    def options(self, **options):
        """placement_group=, placement_group_bundle_index=, pod=, env= (dict),
        working_dir=, name=; Ray's runtime_env={'env_vars', 'working_dir'}.
        Every other option is refused with a TypeError saying why (atl/_options.py)."""
        merged = dict(self._options)
        merged.update(_options.check(options, f"{self.__name__}.options", actor=False))
        clone = RemoteFunction(self._fn, merged, checked=True)
        clone._desc = self._desc
        return clone

    def remote(self, *args, **kwargs):
        """A ref to the call's value (num_returns=n: a list of n refs). Refs
        among the arguments: the call is sent once their values are there."""
        if self._desc is None:
            self._desc = _serialize.encode_function(self._fn)
        o = self._options
        waiting = _refs.pending((args, kwargs))
        if o.get("demand"):
            _check_feasible(o, f"{self.__name__}.remote")
        if waiting or o.get("demand") or o.get("max_retries"):
            ref = self._in_background(waiting, args, kwargs)
        else:
            ref = self._submit(args, kwargs)
        parts = o.get("num_returns")
        return ref._parts(parts) if parts else ref

    def _in_background(self, waiting, args, kwargs):
        """The call from a thread of its own: after the refs it takes, in a
        reservation of its own (num_cpus...), run again after its process
        died (max_retries) or it raised (retry_exceptions)."""
        o, label = self._options, self.__name__
        source = _refs._Call(_refs.new_future())
        source.cancelled = False

        def go():
            group = None
            try:
                for ref in waiting:
                    ref._get(None)
                if o.get("demand") and not o.get("placement_group"):
                    group = _reserve(o["demand"], source, label)
                    source.why = None
                left = o.get("max_retries", 0)
                while True:
                    source.inner = self._submit(args, kwargs, group)
                    try:
                        value = source.inner._get(None)
                        break
                    except BaseException as e:
                        retry = _system_failure(e) or (
                            isinstance(e, TaskError) and _retries_on(o, e))
                        if not retry or left == 0 or source.cancelled:
                            raise
                        left -= 1 if left > 0 else 0
                source.future.set_result(value)
            except BaseException as e:
                source.future.set_exception(e)
            finally:
                if group is not None:
                    _remove_quietly(group)
        threading.Thread(target=go, daemon=True, name="atl-call").start()
        return ObjectRef(label, source)

    def _submit(self, args, kwargs, group=None):
        o = self._options
        pool = None if _placed(o) else _warm_pool()
        body = _refs.Body((self._desc, args, kwargs), f"{self.__name__}.remote")
        result_to = _refs.result_slot()
        if pool is not None:
            future = pool.submit(pickle.dumps(("run", body.wire, result_to)), self.__name__)
            future.add_done_callback(lambda _: body.release())
            return ObjectRef(self.__name__, _refs._Call(future))
        payload = base64.b64encode(pickle.dumps((body.wire, result_to))).decode("ascii")
        env = dict(o.get("env") or {})
        env.update(_payload_env("ATL_TASK_PAYLOAD", payload))
        env["PYTHONPATH"] = _python_path()
        env["ATL_WORKERS_PER_NODE"] = "0"  # its own atl.init() starts no warm processes
        pg, bundle, pod = (group, 0, None) if group is not None else _where(o)
        command = f"exec {sys.executable} -m atl._worker"
        try:
            task = run(command, placement_group=pg, bundle_index=bundle, pod=pod, env=env,
                       working_dir=o.get("working_dir"))
        except BaseException:
            body.release()
            raise
        return ObjectRef(self.__name__, _refs._Task(task, keep=body, result_oid=result_to[1]))

    def __call__(self, *args, **kwargs):
        raise TypeError(f"remote function {self.__name__} is called with "
                        f"{self.__name__}.remote(...)")


# --- named actors ----------------------------------------------------------------


class ActorHost:
    """An actor this process hosts (atl.host_actor); close() ends it."""

    def __init__(self, name, handler):
        self.name = name
        self._client = _c()  # closed through the client that hosts it, even after a re-init
        self._handle, self._callback = self._client.actor_host(name, handler)

    def close(self):
        if self._handle:
            self._client.actor_close(self._handle)
            self._handle = None


def host_actor(name, handler):
    """Hosts `handler(request: bytes) -> bytes` under `name`: any process of
    the job can call it (atl.get_actor(name).call(b"...")). It runs on a
    thread of the library, one call at a time; what it raises is the caller's
    error."""
    return ActorHost(name, handler)


def _c_actor_names():
    return [a["name"] for a in json.loads(_c().actor_list())]


def list_actors():
    """The job's named actors: [{"name", "owner", "calls", "pending"}] (an
    actor's extra names for its max_concurrency calls not listed)."""
    return [a for a in json.loads(_c().actor_list()) if "~" not in a["name"]]


class _Method:
    def __init__(self, actor, name):
        self._actor = actor
        self._name = name

    def remote(self, *args, **kwargs):
        """A ref to the method's value; refs among the arguments: sent once
        their values are there."""
        actor, method = self._actor, self._name
        label = f"{actor.name}.{method}"
        waiting = _refs.pending((args, kwargs))

        def call():
            for ref in waiting:
                ref._get(None)
            body = _refs.Body((method, args, kwargs), label)
            try:
                return actor._call(body, label)
            finally:
                body.release()
        return ActorRef(label, _refs._Call(_pool().submit(call)))


class ActorHandle:
    """A named actor: call(bytes) for any actor; for one started from an
    @atl.remote class, handle.method.remote(...) returns a ref for atl.get."""

    def __init__(self, name, task=None, timeout=None, lanes=1):
        self.name = name
        self._task = task
        self._timeout = timeout  # a method call's; None: none (a hung host fails it anyway)
        self._lanes = lanes  # max_concurrency: its names name, name~1, ... take calls at once
        self._turn = 0
        self._direct = None  # its process's object server, once asked (False: none)

    def call(self, data, timeout=30):
        """The actor's reply to `data` (bytes); timeout in seconds, None: no deadline."""
        ms = _FOREVER_MS if timeout is None else max(1, _ms(timeout))
        return _c().actor_call(self.name, bytes(data), ms)

    def _call(self, body, label):
        """A method call (body: method, args, kwargs) and its value."""
        request = pickle.dumps(("call", body.wire, _refs.result_slot()))
        where = self._direct_address()
        if where:
            try:
                reply = _objects.call_direct(where, self.name, request, self._alive)
                return _refs.outcome_value(pickle.loads(reply), label)
            except _objects.ObjectLostError as e:
                if not self._alive():
                    raise ActorDiedError(f"{label}: the actor {self.name!r} died: {e}") from None
                # Alive, but not reachable straight (a network that lets
                # only the control plane through): through the supervisor.
                self._direct = False
        lane = self._turn % self._lanes
        self._turn += 1
        try:
            reply = _c().actor_call(self.name if lane == 0 else f"{self.name}~{lane}", request,
                                    _FOREVER_MS if self._timeout is None else _ms(self._timeout))
        except GetTimeoutError:
            raise
        except AtlError as e:
            # Its host died under the call (FAILED), or it is gone already
            # (a handle to it is no longer in the directory: "no actor named").
            if e.code == FAILED or (isinstance(e, UsageError) and "no actor named" in str(e)):
                raise ActorDiedError(f"{label}: the actor {self.name!r} died: {e}") from None
            raise
        return _refs.outcome_value(pickle.loads(reply), label)

    def _direct_address(self):
        """The object server of the actor's process (asked once, through the
        supervisor), where its method calls go straight: one hop, not two.
        False when it has none (a host_actor handler, an older atl)."""
        if self._direct is None:
            try:
                reply = self.call(pickle.dumps(("where", None, None)), timeout=30)
                where = _refs.outcome_value(pickle.loads(reply), f"{self.name}: where")
                self._direct = where if isinstance(where, str) else False
            except Exception:
                self._direct = False
        return self._direct

    def _alive(self):
        """The supervisor's word on the actor (its host's heartbeats)."""
        try:
            return self.name in _c_actor_names()
        except AtlError:
            return False

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)
        return _Method(self, method)

    def __repr__(self):
        return f"ActorHandle({self.name!r})"


_started = {}  # name -> task of the actors this driver started (atl.kill takes them by name)
_owned_actors = {}  # name -> task: those not detached, killed when this driver shuts down


def _remove_when_ends(task, group):
    """An actor's own reservation, given back when its process ends."""
    while True:
        try:
            task.wait(timeout=None)
            break
        except GetTimeoutError:
            continue
        except AtlError:
            break  # its pod was lost, or this driver's connection closed
    _remove_quietly(group)


def _kill_owned_actors():
    """What shutdown() does to this driver's actors that are not detached (as Ray's)."""
    while _owned_actors:
        name, task = _owned_actors.popitem()
        _started.pop(name, None)
        try:
            task.kill()
        except AtlError:
            pass


def get_actor(name, timeout=0):
    """The actor named `name`. As Ray's: ValueError at once when the job has
    none; with timeout= (seconds) it waits that long for one to appear (an
    actor another process is starting), then GetTimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        actors = _c_actor_names()
        if name in actors:
            lanes = 1 + sum(1 for a in actors if a.startswith(name + "~"))
            return ActorHandle(name, _started.get(name), lanes=lanes)
        if not timeout:
            raise ValueError(f"atl.get_actor: no actor named {name!r} in this job "
                             f"(atl.list_actors() has the job's)")
        if time.monotonic() >= deadline:
            raise GetTimeoutError(5, f"no actor named {name!r} after {timeout} s")
        time.sleep(0.02)


def kill(actor):
    """Ends an actor started from an @atl.remote class (its process), by
    this driver or another."""
    if actor._task is None:
        # Started by another process: asked to end itself (an @atl.remote
        # class's process does; a host_actor handler's host closes it).
        try:
            actor.call(pickle.dumps(("exit", None, None)), timeout=30)
        except AtlError as e:
            if not (e.code == FAILED or "no actor named" in str(e)):
                raise  # (FAILED: it died as it answered, as asked)
        _started.pop(actor.name, None)
        return
    actor._task.kill()
    _started.pop(actor.name, None)
    _owned_actors.pop(actor.name, None)


_executor = None
_executor_lock = threading.Lock()  # not _lock: the warm pool's threads come here


def _pool():
    global _executor
    with _executor_lock:
        if _executor is None:
            from concurrent.futures import ThreadPoolExecutor
            _executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="atl-call")
        return _executor


class ActorClass:
    def __init__(self, cls, options, checked=False):
        self._cls = cls
        self.__name__ = cls.__name__
        self._options = options if checked else _options.check(
            options, f"actor class {self.__name__}", actor=True)

    def options(self, **options):
        merged = dict(self._options)
        merged.update(_options.check(options, f"{self.__name__}.options", actor=True))
        return ActorClass(self._cls, merged, checked=True)

    def remote(self, *args, **kwargs):
        """Starts the actor in a process on a worker (in a bundle with
        placement_group=, on pod=, else the least busy) and returns its handle
        once it answers. name= names it (default: a unique one)."""
        import uuid
        o = self._options
        label = f"{self.__name__}.remote"
        if (o.get("detached") or o.get("get_if_exists")) and not o.get("name"):
            raise UsageError(USAGE, f"{label}: a detached actor, or one got if it exists, needs "
                                    f"a name (name=...)")
        name = o.get("name") or f"{self.__name__}-{uuid.uuid4().hex[:12]}"
        if o.get("get_if_exists"):
            try:
                return get_actor(name)
            except ValueError:
                pass  # none yet: made here (a racing maker's name is taken: refused)
        if o.get("demand"):
            _check_feasible(o, label)
        for ref in _refs.pending((args, kwargs)):
            ref._get(None)
        lanes = o.get("max_concurrency", 1)
        body = _refs.Body((_serialize.encode_class(self._cls), args, kwargs, name, lanes), label)
        group = None
        try:
            if o.get("demand") and not o.get("placement_group"):
                # Its own reservation, for as long as it lives.
                group = _reserve(o["demand"], None, label, o.get("start_timeout", 60))
            handle = self._start(o, name, body, group)
        except BaseException:
            if group is not None:
                _remove_quietly(group)
            raise
        finally:
            body.release()
        handle._lanes = lanes
        if group is not None:
            threading.Thread(target=_remove_when_ends, args=(handle._task, group),
                             daemon=True, name="atl-actor-group").start()
        if not o.get("detached"):
            _owned_actors[name] = handle._task
        return handle

    def _start(self, o, name, body, group):
        # A detached actor outlives this driver, so not one of its warm processes.
        warm = not (_placed(o) or o.get("detached") or o.get("max_concurrency"))
        pool = _warm_pool() if warm else None
        worker = pool.take_idle() if pool is not None else None
        if worker is not None:
            return self._become(pool, worker, name, body)
        payload = base64.b64encode(pickle.dumps((body.wire, _refs.result_slot()))).decode("ascii")
        env = dict(o.get("env") or {})
        env.update(_payload_env("ATL_ACTOR_PAYLOAD", payload))
        env["PYTHONPATH"] = _python_path()
        env["ATL_WORKERS_PER_NODE"] = "0"  # its own atl.init() starts no warm processes
        pg, bundle, pod = (group, 0, None) if group is not None else _where(o)
        task = run(f"exec {sys.executable} -m atl._worker actor", placement_group=pg,
                   bundle_index=bundle, pod=pod, env=env, working_dir=o.get("working_dir"))
        deadline = time.monotonic() + o.get("start_timeout", 60)
        while not any(a["name"] == name for a in list_actors()):
            if task.done():
                text = _c().task_result(task.id, 1000)
                if text is not None:
                    _refs.outcome_value(pickle.loads(base64.b64decode(text)),
                                        f"actor {name}: its constructor")
                raise RemoteError(f"actor {name} ended before it answered: "
                                  f"{task.output()[-2000:]!r}")
            if time.monotonic() >= deadline:
                task.kill()
                raise GetTimeoutError(5, f"actor {name} did not start in time")
            time.sleep(0.01)
        _started[name] = task
        return ActorHandle(name, task)

    def _become(self, pool, worker, name, body):
        """The actor in a warm process: its instance made there, hosted under `name`."""
        request = pickle.dumps(("become", body.wire, _refs.result_slot()))
        try:
            outcome = pickle.loads(_c().actor_call(
                worker.name, request, _ms(self._options.get("start_timeout", 60))))
        except AtlError:
            worker.task.kill()
            raise
        if outcome[0] == "err":
            pool.give_back(worker)
            _refs.outcome_value(outcome, f"actor {name}: its constructor")
        _started[name] = worker.task
        return ActorHandle(name, worker.task)


def remote(*args, **options):
    """@atl.remote or @atl.remote(pod=...) on a function (a task per call) or
    a class (an actor: a process on a worker hosting one instance)."""
    def wrap(obj):
        if isinstance(obj, type):
            return ActorClass(obj, options)
        return RemoteFunction(obj, options)
    if len(args) == 1 and not options and callable(args[0]):
        return wrap(args[0])
    return wrap


def get(refs, timeout=None):
    """The value(s) of remote calls; RemoteError if one raised, GetTimeoutError
    if one is not done after `timeout` seconds (all of them together)."""
    single = isinstance(refs, ObjectRef)
    if not single and not isinstance(refs, (list, tuple)):
        raise UsageError(USAGE, f"atl.get: expected an ObjectRef or a list of them, "
                                f"got {type(refs).__name__} {refs!r:.60}")
    items = [refs] if single else list(refs)
    for i, ref in enumerate(items):
        if not isinstance(ref, ObjectRef):
            raise UsageError(USAGE, f"atl.get: item {i} is {type(ref).__name__} {ref!r:.60}, "
                                    f"not an ObjectRef")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
        raise UsageError(USAGE, f"atl.get: timeout={timeout!r}: expected seconds >= 0 or None")
    deadline = None if timeout is None else time.monotonic() + timeout
    values = []
    for ref in items:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        values.append(ref._get(left))
    return values[0] if single else values


def wait(refs, num_returns=1, timeout=None):
    """(ready, not_ready), as Ray's: the first `num_returns` refs done (in
    their order in `refs`), or those done when `timeout` seconds passed.
    Blocks on the calls' own futures (no polling); a task's ref is watched
    by a thread of its own, blocked in the supervisor's answer."""
    from concurrent.futures import FIRST_COMPLETED
    from concurrent.futures import wait as wait_futures
    refs = list(refs)
    for i, ref in enumerate(refs):
        if not isinstance(ref, ObjectRef):
            raise UsageError(USAGE, f"atl.wait: item {i} is {type(ref).__name__}, not an ObjectRef")
    if isinstance(num_returns, bool) or not isinstance(num_returns, int) or \
            not 1 <= num_returns <= max(1, len(refs)):
        raise UsageError(USAGE, f"atl.wait: num_returns={num_returns!r}: expected 1 to "
                                f"{len(refs)} (the refs given)")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
        raise UsageError(USAGE, f"atl.wait: timeout={timeout!r}: expected seconds >= 0 or None")
    deadline = None if timeout is None else time.monotonic() + timeout
    watched = [ref._source.watch() for ref in refs]
    while True:
        done = [ref for ref, f in zip(refs, watched) if f.done()]
        left = None if deadline is None else deadline - time.monotonic()
        if len(done) >= num_returns or (left is not None and left <= 0) or not refs:
            ready = done[:num_returns]
            chosen = set(map(id, ready))
            return ready, [r for r in refs if id(r) not in chosen]
        wait_futures([f for f in watched if not f.done()], timeout=left,
                     return_when=FIRST_COMPLETED)
