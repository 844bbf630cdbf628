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

A remote function runs on a worker, given by value (cloudpickle), its
arguments and value of any size (small ones inside the call, big ones over
the object plane: atl._objects). With no placement of its own it runs in one
of the driver's warm processes (started by init(), `workers_per_node` on
each worker; see atl._workerpool), else as a task: a fresh Python process
(the driver's interpreter path) in its bundle, on its pod, or in a
reservation of its own (num_cpus...). atl.run() starts a plain command.

The package by concern: this module (connection, tasks, get/wait),
_placement (groups, reservations), _remote (remote functions), _actors
(named actors, @atl.remote classes), _refs and _objects (refs, the object
plane), _options (every option, honoured or refused), _errors, _workerpool,
_worker (what runs on a pod), _serialize, _capi (libatl.so).
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from typing import Any, Sequence

from ._capi import (USAGE, AtlError, Client, GetTimeoutError, RefusedError, UnreachableError,
                    UsageError)
from . import _objects, _options  # noqa: F401 (atl._objects: the object plane)
from ._errors import ActorDiedError, OwnerDiedError, RemoteError, TaskCancelledError, TaskError
from ._refs import (ActorRef, DynamicObjectRefGenerator, ObjectRef,  # noqa: F401 (the API's)
                    ObjectRefGenerator, put)

__all__ = ["progress", "init", "shutdown", "is_initialized", "job_info", "cluster_state", "nodes",
           "cluster_resources", "available_resources", "placement_group",
           "remove_placement_group", "PlacementGroup", "remote", "get", "wait", "run", "Task",
           "ObjectRef", "AtlError", "UsageError", "RefusedError", "UnreachableError",
           "GetTimeoutError", "RemoteError", "TaskError", "ActorDiedError", "OwnerDiedError",
           "TaskCancelledError", "method", "get_runtime_context", "get_gpu_ids",
           "host_actor", "get_actor", "kill", "list_actors", "cancel", "put", "ActorRef",
           "ActorHandle", "ActorHost", "ActorClass", "RemoteFunction"]

# A call travels in the task's environment, in pieces (Linux takes 128 KiB
# per variable): inline when small, else as a ref to the caller's object.
_CHUNK = 96 * 1024


def progress() -> bool:
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
_cpu_limit = None  # ray.init(num_cpus=n)
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


class Context:
    """What init() returns, as Ray's RayContext: `with atl.init():` ends
    with shutdown() at the block's end; address_info says where the job's
    supervisor is. Anything else is the connection's (Client)."""

    def __init__(self, client, address):
        self._client = client
        self._address = address

    def __getattr__(self, name):
        return getattr(self._client, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutdown()
        return False

    @property
    def address_info(self) -> dict:
        """Ray's keys that atl has: the supervisor's HOST:PORT (as
        "address" and Ray's "gcs_address"), this host's address, its node."""
        from .util import get_node_ip_address
        return {"address": self._address, "gcs_address": self._address,
                "node_ip_address": get_node_ip_address(),
                "node_id": RuntimeContext().get_node_id()}


def init(address: str | None = None, tls_dir: str | None = None, insecure: bool = False,
         workers_per_node: int | None = None, **ray_options) -> Context:
    """Connects to the job's supervisor ($ATL_ADDRESS and $ATL_TLS_DIR by
    default, as every driver and rank has them). Calling it again is a no-op.
    workers_per_node: warm Python processes per worker node for remote calls
    with no placement (default $ATL_WORKERS_PER_NODE, else the node's CPUs, at
    most 8; 0: a fresh process per call). Ray's other init() options are
    refused with a TypeError naming them (never ignored)."""
    global _client, _workers_per_node, _cpu_limit
    # Ray's options that mean the same here: calling init() again is a no-op;
    # Ray's own logging and dashboard settings (atl's logs and dashboard are
    # the job's); num_cpus: what this driver's calls hold at once, at most
    # (for a local Ray, the CPUs it has).
    ray_options.pop("ignore_reinit_error", None)
    if address == "auto":
        address = None  # Ray's "the cluster this runs in": the job's ($ATL_ADDRESS)
    elif isinstance(address, str) and (address == "local" or address.startswith("ray://")):
        raise UsageError(USAGE, f"atl.init: address={address!r} is Ray's (a new local cluster, "
                                f"or Ray Client): atl connects to its job's supervisor; give "
                                f"HOST:PORT, \"auto\" or nothing ($ATL_ADDRESS)")
    for cosmetic in ("logging_level", "logging_format", "configure_logging", "include_dashboard",
                     "log_to_driver"):
        ray_options.pop(cosmetic, None)
    ns = ray_options.pop("namespace", None)
    if ns is not None:
        _options.check_namespace("atl.init", ns)
    # The job's runtime_env (env_vars, working_dir): every task's and actor's.
    job_env = {}
    _options.runtime_env_of("atl.init", ray_options.pop("runtime_env", None), job_env)
    num_cpus = ray_options.pop("num_cpus", None)
    if num_cpus is not None and (isinstance(num_cpus, bool) or num_cpus <= 0 or
                                 not isinstance(num_cpus, (int, float))):
        raise TypeError(f"atl.init: num_cpus={num_cpus!r}: expected a number > 0 (the CPUs "
                        f"this driver's calls hold at once)")
    if ray_options.get("num_gpus") == 0:
        ray_options.pop("num_gpus")
    if ray_options:
        name = sorted(ray_options)[0]
        raise TypeError(f"atl.init: option {name!r} is not supported: atl.init takes address, "
                        f"tls_dir, insecure, workers_per_node, num_cpus and namespace (the job's pods and "
                        f"their resources are the cluster); {_options.RAY_MODE}")
    if workers_per_node is not None and (not isinstance(workers_per_node, int)
                                         or workers_per_node < 0):
        raise UsageError(2, f"workers_per_node={workers_per_node!r}: expected an int >= 0")
    where = address or os.environ.get("ATL_ADDRESS")
    with _lock:
        if _client is not None:
            return Context(_client, where)
        per_node = workers_per_node
        if per_node is None:
            per_node = _default_workers_per_node()
        from . import _actors
        if ns is not None:
            # Its named actors are made and found there, and the processes
            # it starts from now on share it (before the warm ones start).
            _actors.namespace = ns
        if job_env:
            # (py_modules: on the path of every process the job's calls start,
            # its warm ones too, not on this driver's, as Ray's)
            _actors.runtime_env = {k: v for k, v in (("env_vars", job_env.get("env")),
                                                     ("working_dir", job_env.get("working_dir")),
                                                     ("py_modules", job_env.get("py_modules")))
                                   if v}
        _client = Client(address, tls_dir, insecure)
        _objects.configure(address, tls_dir, insecure)
        _workers_per_node = per_node
        _cpu_limit = num_cpus
        client = _client
    if per_node != 0:
        # Warm processes start now, in the background, as Ray's are up before
        # a driver connects; the first remote call waits for them if need be.
        threading.Thread(target=_start_warm_pool, daemon=True, name="atl-pool-init").start()
    return Context(client, where)


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


def shutdown() -> None:
    """Disconnects; the actors this driver started end, but for detached ones."""
    global _client, _warm
    if _client is not None:
        _kill_owned_actors()
        _leases.clear()
        _remove_owned()
    with _lock:
        pool, _warm = _warm, None
    if pool:
        pool.close()
    with _lock:
        if _client is not None:
            _client.close()
            _client = None
    from . import _actors
    # A later init() has its own runtime_env (this process's own one, if any, again).
    _actors.runtime_env = json.loads(os.environ.get("ATL_RUNTIME_ENV") or "{}")


def is_initialized() -> bool:
    return _client is not None


def _c():
    """The connection: made on first use, as Ray's init() is, where the
    process runs in a job (a driver, a rank, a task or actor started by
    one: $ATL_ADDRESS is set)."""
    if _client is None:
        if not os.environ.get("ATL_ADDRESS"):
            raise UsageError(2, "atl is not initialized and $ATL_ADDRESS is not set (this "
                                "process is not in an atl job): call atl.init(address=...), or "
                                "run it as a job's entrypoint (headnode --mode driver -- ...)")
        init()
    return _client


def _ms(timeout):
    return 0 if timeout is None else max(0, int(timeout * 1000))


# timeout=None means no deadline: a call that cannot be split waits this long.
_FOREVER_MS = 30 * 24 * 3600 * 1000


def job_info() -> dict:
    """The job as `atlctl status --json` shows it."""
    return json.loads(_c().job_info())


def cluster_state() -> dict:
    """Nodes (total/reserved/available resources), groups, pending demand."""
    return json.loads(_c().cluster_state())


def nodes() -> list[dict]:
    """Every worker node: pod, node, address, total/reserved/available, and
    `unavailable` (why it takes no bundle) when it takes none. Each also
    under Ray's keys (ray.nodes()): NodeID (the pod, as get_node_id() says),
    Alive, NodeManagerAddress (its address), NodeManagerHostname (its
    machine), Resources (its nonzero totals)."""
    out = cluster_state()["nodes"]
    for n in out:
        n.update({"NodeID": n["pod"], "Alive": True, "alive": True,
                  "NodeManagerAddress": n["address"], "NodeManagerHostname": n["node"],
                  "NodeName": n["address"],
                  "Resources": {k: v for k, v in n["total"].items() if v}})
    return out


class RuntimeContext:
    """Ray's runtime context, as atl knows it: the job, the node (the worker
    pod: what NodeAffinitySchedulingStrategy takes), the actor this process
    hosts, the GPUs it sees. Ray's ids that atl has no counterpart for
    (task ids, a node's hex id) are atl's own names."""

    def get_job_id(self) -> str:
        return os.environ.get("ATL_JOB_ID") or job_info()["job_id"]

    def get_node_id(self) -> str | None:
        """The pod this process runs on (None: the driver's own, not a worker)."""
        return os.environ.get("ATL_POD_NAME") or None

    def get_actor_name(self) -> str | None:
        from . import _actors
        return _actors.hosted_actor

    def is_canceled(self) -> bool:
        """In an actor's plain method: whether atl.cancel named this call."""
        from . import _actors
        return getattr(_actors.current_call, "id", None) in _actors.cancelled_calls

    def get_actor_id(self) -> str | None:
        return self.get_actor_name()

    def get_task_id(self) -> str | None:
        return os.environ.get("ATL_TASK_ID") or None

    def get_worker_id(self) -> str:
        return str(os.getpid())

    def get_accelerator_ids(self) -> dict:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return {"GPU": [g for g in visible.split(",") if g]}

    def get_gpu_ids(self) -> list:
        return self.get_accelerator_ids()["GPU"]

    def get_assigned_resources(self) -> dict:
        """What this task or actor holds (its num_cpus, num_gpus, memory,
        resources; a placement group bundle's when started in one): {} for
        a call with no resource option (atl reserves nothing for it)."""
        from . import _actors
        held = getattr(_actors.current_call, "resources", None)
        if held is None:
            held = json.loads(os.environ.get("ATL_ASSIGNED_RESOURCES") or "{}")
        return {k: float(v) for k, v in held.items()}

    def get(self) -> dict:
        """Ray's (deprecated) dict of the context: job_id, node_id,
        namespace, and in a task or actor its task_id or actor_id."""
        out = {"job_id": self.get_job_id(), "node_id": self.get_node_id(),
               "namespace": self.namespace}
        for key, value in (("task_id", self.get_task_id()), ("actor_id", self.get_actor_id())):
            if value is not None:
                out[key] = value
        return out

    @property
    def current_actor(self):
        """In an actor's process: a handle of the actor itself (Ray's);
        elsewhere RuntimeError."""
        from . import _actors
        if not _actors.hosted_actor:
            raise RuntimeError("This method is only available in an actor.")
        return _actors.handle_of(_actors.hosted_actor)

    @property
    def namespace(self) -> str:
        from . import _actors
        return _actors.namespace  # "": the job's own (init(namespace=) names one)

    @property
    def was_current_actor_reconstructed(self) -> bool:
        # An actor made again after its process ended (max_restarts).
        return os.environ.get("ATL_ACTOR_RESTARTED") == "1" or \
            int(os.environ.get("ATL_TASK_RESTARTS") or 0) > 0  # (the head's, a detached one's)


def get_runtime_context() -> RuntimeContext:
    """As Ray's ray.get_runtime_context()."""
    return RuntimeContext()


def get_gpu_ids() -> list:
    """The GPUs this process sees (CUDA_VISIBLE_DEVICES), as Ray's."""
    return RuntimeContext().get_gpu_ids()


def _sum(kind):
    out = {}
    for n in nodes():
        for k, v in n[kind].items():
            out[k] = out.get(k, 0) + v
    return out


def cluster_resources() -> dict[str, float]:
    return _sum("total")


def available_resources() -> dict[str, float]:
    return _sum("available")


# --- tasks ------------------------------------------------------------------------


class Task:
    """A command running on a worker (atl.run), or a remote function's process."""

    def __init__(self, tid):
        self.id = tid
        self._offset = 0

    def wait(self, timeout: float | None = None) -> int:
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

    def done(self) -> bool:
        try:
            self.wait(0)
            return True
        except GetTimeoutError:
            return False

    def output(self) -> str:
        """Everything it wrote so far (stdout and stderr), as text."""
        chunks, offset = [], 0
        while True:
            data, offset = _c().task_output(self.id, offset)
            if not data:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(data)

    def read_new(self) -> str:
        """What it wrote since the last read_new() (line by line as it goes)."""
        chunks = []
        while True:
            data, self._offset = _c().task_output(self.id, self._offset)
            if not data:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(data)

    def kill(self) -> None:
        _c().task_kill(self.id)


def run(command: str, placement_group: "PlacementGroup | None" = None, bundle_index: int = 0,
        pod: str | None = None, env: dict[str, str] | None = None,
        working_dir: str | None = None) -> Task:
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
                    _warm = WorkerPool(sys.modules[__name__], per_node, _python_path(),
                                       _cpu_limit)
            except AtlError:
                return None  # no active worker yet, say: the next call tries again
        pool = _warm
    return pool if pool and not pool.broken else None


def cancel(ref: ObjectRef, *, force: bool = False, recursive: bool = True) -> None:
    """Stops a remote function call: a waiting one is dropped, a running one's
    process killed (and not retried), with or without force= (Ray's force
    kills the worker; atl always does). atl.get(ref) then raises
    TaskCancelledError."""
    if not isinstance(ref, ObjectRef):
        raise UsageError(2, f"cancel: {ref!r} is not an ObjectRef")
    source = ref._source
    if source.done():
        return  # as Ray's: a finished call keeps its value
    source.user_cancelled = True  # its get says so (TaskCancelledError)
    actor_call = getattr(source, "actor_call", None)
    if actor_call is not None:
        # An actor's call: one not started yet is dropped; one under way is
        # told (in the background: a cancel never waits on the actor).
        if not source.future.cancel():
            handle, call_id = actor_call
            threading.Thread(target=handle._cancel, args=(call_id,), daemon=True,
                             name="atl-cancel").start()
        return
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


def get(refs: "ObjectRef | Sequence[ObjectRef]", timeout: float | None = None) -> Any:
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


def wait(refs: Sequence[ObjectRef], num_returns: int = 1, timeout: float | None = None,
         fetch_local: bool = True) -> tuple[list[ObjectRef], list[ObjectRef]]:
    """(ready, not_ready), as Ray's: the first `num_returns` refs done (in
    their order in `refs`), or those done when `timeout` seconds passed.
    fetch_local (Ray's: whether ready also means here already) changes
    nothing: a ref that is done is read from where it is at its get. Blocks on the calls' own futures (no polling); a task's ref is watched
    by a thread of its own, blocked in the supervisor's answer."""
    from concurrent.futures import FIRST_COMPLETED
    from concurrent.futures import wait as wait_futures
    from ._refs import ObjectRefGenerator
    refs = list(refs)
    for i, ref in enumerate(refs):
        if not isinstance(ref, (ObjectRef, ObjectRefGenerator)):
            raise UsageError(USAGE, f"atl.wait: item {i} is {type(ref).__name__}, not an "
                                    f"ObjectRef (or a generator's ObjectRefGenerator)")
    if isinstance(num_returns, bool) or not isinstance(num_returns, int) or \
            not 1 <= num_returns <= max(1, len(refs)):
        raise UsageError(USAGE, f"atl.wait: num_returns={num_returns!r}: expected 1 to "
                                f"{len(refs)} (the refs given)")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
        raise UsageError(USAGE, f"atl.wait: timeout={timeout!r}: expected seconds >= 0 or None")
    if not isinstance(fetch_local, bool):
        raise UsageError(USAGE, f"atl.wait: fetch_local={fetch_local!r}: expected True or False")
    deadline = None if timeout is None else time.monotonic() + timeout
    # A generator is ready once its next item is here (or it has ended).
    watched = [ref.watch() if isinstance(ref, ObjectRefGenerator) else ref._source.watch()
               for ref in refs]
    while True:
        done = [ref for ref, f in zip(refs, watched) if f.done()]
        left = None if deadline is None else deadline - time.monotonic()
        if len(done) >= num_returns or (left is not None and left <= 0) or not refs:
            ready = done[:num_returns]
            chosen = set(map(id, ready))
            return ready, [r for r in refs if id(r) not in chosen]
        wait_futures([f for f in watched if not f.done()], timeout=left,
                     return_when=FIRST_COMPLETED)


# The API's other parts, in modules of their own (they use the core above).
from ._placement import (PlacementGroup, _leases, _remove_owned, _removals,  # noqa: E402,F401
                         placement_group,
                         remove_placement_group)
from ._remote import RemoteFunction, _python_path  # noqa: E402
from ._actors import (ActorClass, ActorHandle, ActorHost, _kill_owned_actors,  # noqa: E402,F401
                      get_actor, host_actor, kill, list_actors, method)
# As `import ray` gives ray.exceptions, ray.actor and ray.util without an
# import of their own.
from . import actor, dag, exceptions, util  # noqa: E402,F401
