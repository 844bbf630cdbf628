"""Named actors: any process hosts one (host_actor, bytes in and out), any
other calls it; an @atl.remote class is an actor in a process on a worker
(a warm one taken over, or its own), its methods called straight at that
process once its address is known (the supervisor keeps the directory and
the liveness)."""
from __future__ import annotations

import base64
import json
import pickle
import sys
import threading
import time
from typing import Callable

from . import _objects, _options, _refs, _serialize
from . import _FOREVER_MS, _c, _ms, _payload_env, _warm_pool, run
from ._capi import FAILED, USAGE, AtlError, GetTimeoutError, UsageError
from ._errors import ActorDiedError, RemoteError
from ._placement import _check_feasible, _remove_quietly, _reserve
from ._refs import ActorRef
from ._remote import _placed, _python_path, _where


class ActorHost:
    """An actor this process hosts (atl.host_actor); close() ends it."""

    def __init__(self, name, handler):
        self.name = name
        self._client = _c()  # closed through the client that hosts it, even after a re-init
        self._handle, self._callback = self._client.actor_host(name, handler)

    def close(self) -> None:
        if self._handle:
            self._client.actor_close(self._handle)
            self._handle = None


def _call_ms(timeout):
    """An actor call's limit in ms: None is no deadline (a hung host fails it anyway)."""
    return _FOREVER_MS if timeout is None else max(1, _ms(timeout))


def host_actor(name: str, handler: Callable[[bytes], bytes]) -> ActorHost:
    """Hosts `handler(request: bytes) -> bytes` under `name`: any process of
    the job can call it (atl.get_actor(name).call(b"...")). It runs on a
    thread of the library, one call at a time; what it raises is the caller's
    error."""
    return ActorHost(name, handler)


def _c_actor_names():
    return [a["name"] for a in json.loads(_c().actor_list())]


def list_actors() -> list[dict]:
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
        self._connecting = None  # the thread opening the first connection there

    def call(self, data: bytes, timeout: float | None = 30) -> bytes:
        """The actor's reply to `data` (bytes); timeout in seconds, None: no deadline."""
        return _c().actor_call(self.name, bytes(data), _call_ms(timeout))

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
                                    _call_ms(self._timeout))
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
        if not self._direct:
            return False
        if self._connecting is None:
            # The first connection's TLS handshake (~10 ms here) off the
            # calls' clock: they go through the supervisor until it is up.
            self._connecting = threading.Thread(target=_objects.preconnect, args=(self._direct,),
                                                daemon=True, name="atl-actor-connect")
            self._connecting.start()
        return False if self._connecting.is_alive() else self._direct

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


def get_actor(name: str, timeout: float = 0) -> ActorHandle:
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


def kill(actor: ActorHandle) -> None:
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
        self._desc = None  # the class as it travels, made at the first .remote()

    def options(self, **options):
        clone = ActorClass(self._cls, _options.merge(
            self._options, options, f"{self.__name__}.options", actor=True), checked=True)
        clone._desc = self._desc
        return clone

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
        if self._desc is None:
            self._desc = _serialize.encode_class(self._cls)
        body = _refs.Body((self._desc, args, kwargs, name, lanes), label)
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
        where = _refs.outcome_value(outcome, f"actor {name}: its constructor")
        _started[name] = worker.task
        handle = ActorHandle(name, worker.task)
        if isinstance(where, str):
            handle._direct = where
        return handle
