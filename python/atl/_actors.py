"""Named actors: any process hosts one (host_actor, bytes in and out), any
other calls it; an @atl.remote class is an actor in a process on a worker
(a warm one taken over, or its own), its methods called straight at that
process once its address is known (the supervisor keeps the directory and
the liveness)."""
from __future__ import annotations

import base64
import inspect
import json
import os
import pickle
import sys
import threading
import time
import uuid
import weakref
from typing import Callable

from . import _objects, _options, _refs, _serialize
from . import _FOREVER_MS, _c, _ms, _payload_env, _warm_pool, run
from ._capi import FAILED, USAGE, AtlError, GetTimeoutError, UsageError
from ._errors import ActorDiedError, RemoteError, TaskError
from ._placement import (_check_feasible, _disown, _remove_quietly, _reserve, captured,
                         placement_env)
from ._refs import ActorRef
from ._remote import _placed, _python_path, _warm_fits, _where


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


_EVERY_ACTORS_METHODS = ("__ray_ready__", "__ray_terminate__")


class _Method:
    def __init__(self, actor, name, options=None):
        self._actor = actor
        self._name = name
        self._options = options  # .options(...)'s, over the method's @atl.method ones

    def options(self, **options):
        """This call's options: num_returns, as @atl.method takes."""
        return _Method(self._actor, self._name,
                       dict(self._options or {}, **_method_options(options, self._name)))

    def bind(self, *args, **kwargs):
        """The call as a node of a graph (Ray's DAG API, atl.dag), made on
        this actor when the graph is executed."""
        from .dag import ClassMethodNode
        return ClassMethodNode(self._name, args, kwargs, {}, {"parent_class_node": self._actor})

    def remote(self, *args, **kwargs):
        """A ref to the method's value; refs among the arguments: sent once
        their values are there."""
        actor, method = self._actor, self._name
        label = f"{actor._actor_name}.{method}"
        waiting = _refs.pending((args, kwargs))

        call_id = uuid.uuid4().hex[:16]  # what atl.cancel names to the actor
        o = dict(((actor._methods or {}).get(method) or {}), **(self._options or {}))
        generator = o.get("generator", False)
        # A streaming generator's items come to this slot as they are yielded.
        slot = _refs.result_slot(stream=True, backpressure=o.get("backpressure")) \
            if _refs.is_streaming(o.get("num_returns"), generator) else None

        group = o.get("concurrency_group")

        def call():
            for ref in waiting:
                ref._get(None)
            body = _refs.Body((method, args, kwargs), label)
            try:
                return actor._call(body, label, call_id, slot, group)
            finally:
                body.release()
        source = _refs._Call(actor._sender(group).submit(call))
        source.actor_call = (actor, call_id)
        ref = ActorRef(label, source)
        return _refs.shaped(ref, o.get("num_returns"), generator, slot)


def _method_options(options, name):
    """@atl.method's (and a method's .options()) checked: num_returns, as
    Ray's; Ray's others refused by name."""
    out = {}
    for key, value in options.items():
        if key == "num_returns":
            if value in ("streaming", "dynamic"):
                out[key] = value
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TypeError(f"method {name}: num_returns={value!r}: expected a whole "
                                f"number >= 1 (the values it returns, one ref each)")
            out[key] = value
        elif key == _options.BACKPRESSURE:
            out["backpressure"] = _options.backpressure(f"method {name}", value)
        elif key == "enable_task_events":
            pass  # Ray's observability of the method: nothing to turn off here
        elif key == "concurrency_group":
            if not isinstance(value, str) or not value:
                raise TypeError(f"method {name}: concurrency_group={value!r}: the name of one "
                                f"of the actor's concurrency_groups")
            out[key] = value
        else:
            raise TypeError(f"method {name}: option {key!r} is not supported: atl's actor "
                            f"methods take num_returns, concurrency_group and "
                            f"{_options.BACKPRESSURE}; {_options.RAY_MODE}")
    return out


def method(*args, **options):
    """@atl.method(num_returns=n) on an actor class's method, as Ray's
    @ray.method: its calls return n refs, one per value."""
    def wrap(fn):
        fn.__atl_method_options__ = _method_options(options, getattr(fn, "__name__", "?"))
        return fn
    if len(args) == 1 and callable(args[0]) and not options:
        return wrap(args[0])
    if args:
        raise TypeError("atl.method takes options by name: @atl.method(num_returns=2)")
    return wrap


def _method_table(cls):
    """The class's public methods and their @atl.method options."""
    table = {}
    for n in dir(cls):
        if n.startswith("__"):
            continue
        fn = getattr(cls, n, None)
        if callable(fn):
            table[n] = dict(getattr(fn, "__atl_method_options__", {}))
            if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
                table[n]["generator"] = True
    return table


class ActorHandle:
    """A named actor: call(bytes) for any actor; for one started from an
    @atl.remote class, handle.method.remote(...) returns a ref for atl.get."""

    __class_getitem__ = _refs._generic  # ActorHandle[Counter] in a type hint, as Ray's

    def __init__(self, name, task=None, timeout=None, lanes=1, methods=None):
        self._actor_name = name
        self.name = name
        self._task = task
        self._timeout = timeout  # a method call's; None: none (a hung host fails it anyway)
        self._lanes = lanes  # max_concurrency: its names name, name~1, ... take calls at once
        self._turn = 0
        self._direct = None  # its process's object server, once asked (False: none)
        self._connecting = None  # the thread opening the first connection there
        # This caller's calls to it, in order: a _Sender per concurrency group
        # (None: the default one), made at the first call there, so that a
        # group's calls waiting for their turn never hold up another's.
        self._calls = {}
        self._where_lock = threading.Lock()
        # max_restarts != 0: a call that finds it dead waits for its restart
        # (by the process that made it); max_task_retries: a call it died
        # under is sent again that many times (-1: always).
        self._restartable = False
        self._task_retries = 0
        self._creation_error = None  # what its constructor raised: every call says so
        # Which actor of that name (see _killed): a handle of one this process
        # killed fails at once; one of a later actor of the name works.
        self._incarnation = _incarnations.get(name, 0)
        # Its class's methods and their @atl.method options (None: a
        # host_actor's, or unknown): a method named as the handle's own
        # `call` or `name` is the method, as in Ray.
        self._know(methods)

    def _know(self, methods):
        self._methods = methods
        for own in ("call", "name"):
            if methods is not None and own in methods:
                self.__dict__[own] = _Method(self, own)

    def _sender(self, group=None):
        with _sender_lock:
            if group not in self._calls:
                self._calls[group] = _Sender(min(self._lanes, MAX_CALLS_AT_ONCE),
                                             self._actor_name)
            return self._calls[group]

    def call(self, data: bytes, timeout: float | None = 30) -> bytes:
        """The actor's reply to `data` (bytes); timeout in seconds, None: no deadline."""
        return _c().actor_call(self._actor_name, bytes(data), _call_ms(timeout))

    def _call(self, body, label, call_id=None, result_to=None, group=None):
        """A method call (body: method, args, kwargs) and its value. An actor
        with max_restarts: a call that finds it dead (gone, or restarting)
        waits for its restart and goes there; one it died under is sent
        again only within max_task_retries, as Ray's."""
        retries = self._task_retries
        while True:
            restarts = _restarts.get(self._actor_name)
            if restarts is not None:
                restarts.wait_alive()  # being made again: the call goes to the new process
            try:
                return self._call_once(body, label, call_id, result_to, group)
            except ActorDiedError as e:
                if not self._restartable or _was_killed(self):
                    raise
                self._direct, self._connecting = None, None  # its new process: asked again
                if not _wait_restarted(self._actor_name):
                    raise ActorDiedError(f"{e} (and it was not restarted: its max_restarts are "
                                         f"used, or the process that made it is gone)") from None
                if getattr(e, "reached", True):
                    if retries == 0:
                        raise
                    retries -= 1 if retries > 0 else 0

    def _call_once(self, body, label, call_id, result_to, group=None):
        if self._creation_error is not None:
            died = ActorDiedError(f"{label}: the actor died because of an error raised in its "
                                  f"creation task: {self._creation_error}")
            died.cause = getattr(self._creation_error, "cause", None)
            raise died
        if _was_killed(self):
            raise ActorDiedError(f"{label}: the actor {self._actor_name!r} was killed "
                                 f"(atl.kill)")
        request = pickle.dumps(("call", body.wire, result_to or _refs.result_slot(), call_id,
                                group))
        where = self._direct_address()
        if where:
            try:
                reply = _objects.call_direct(where, self._actor_name, request, self._alive)
                return _refs.outcome_value(pickle.loads(reply), label)
            except _objects.ObjectLostError as e:
                # (a restartable one's new process may be up already: this
                # call was under its old one)
                if self._restartable or not self._alive():
                    died = ActorDiedError(f"{label}: the actor {self._actor_name!r} died: {e}")
                    died.reached = getattr(e, "sent", True)
                    raise died from None
                # Alive, but not reachable straight (a network that lets
                # only the control plane through): through the supervisor.
                self._direct = False
        lane = self._turn % min(self._lanes, MAX_NAMES)  # (the names it is hosted under)
        self._turn += 1
        try:
            reply = _c().actor_call(self._actor_name if lane == 0 else f"{self._actor_name}~{lane}", request,
                                    _call_ms(self._timeout))
        except GetTimeoutError:
            raise
        except AtlError as e:
            # Its host died under the call (FAILED), or it is gone already
            # (a handle to it is no longer in the directory: "no actor named").
            if e.code == FAILED or (isinstance(e, UsageError) and "no actor named" in str(e)):
                died = ActorDiedError(f"{label}: the actor {self._actor_name!r} died: {e}")
                died.reached = e.code == FAILED  # gone already: the call never reached it
                raise died from None
            raise
        return _refs.outcome_value(pickle.loads(reply), label)

    def _direct_address(self):
        """The object server of the actor's process (asked once, through the
        supervisor), where its method calls go straight: one hop, not two.
        False when it has none (a host_actor handler, an older atl)."""
        with self._where_lock:  # calls at once ask once
            self._ask_where()
        if not self._direct:
            return False
        if self._lanes > 1:
            # Calls at once go straight, each on a connection of its own:
            # through the supervisor they would share its few names.
            self._connecting.join(30)
        return False if self._connecting.is_alive() else self._direct

    def _ask_where(self):
        if self._direct is None:
            request = pickle.dumps(("where", None, None))
            try:
                try:
                    # An actor taking calls at once answers "where" under a
                    # name of its own: its other names may all be held by
                    # calls that wait (on a signal this caller would send).
                    reply = _c().actor_call(f"{self._actor_name}~where", request, 30000) \
                        if self._lanes > 1 else None
                except AtlError:
                    reply = None
                if reply is None:
                    reply = ActorHandle.call(self, request, timeout=30)
                where = _refs.outcome_value(pickle.loads(reply), f"{self._actor_name}: where")
                self._direct = where if isinstance(where, str) else False
            except Exception:
                self._direct = False
        if self._direct and self._connecting is None:
            # The first connection's TLS handshake (~10 ms here) off the
            # calls' clock: they go through the supervisor until it is up.
            self._connecting = threading.Thread(target=_objects.preconnect, args=(self._direct,),
                                                daemon=True, name="atl-actor-connect")
            self._connecting.start()

    def _alive(self):
        """The supervisor's word on the actor (its host's heartbeats)."""
        try:
            return self._actor_name in _c_actor_names()
        except AtlError:
            return False

    def _cancel(self, call_id):
        """Tells the actor that call `call_id` is cancelled (atl.cancel of a
        call under way): an async method gets CancelledError, a plain one
        finds atl.get_runtime_context().is_canceled() true. Sent beside the
        call, never behind it: straight to the process, or under the name no
        call holds."""
        request = pickle.dumps(("cancel", None, None, call_id))
        try:
            with self._where_lock:
                self._ask_where()
            if self._direct:
                # Straight there even while the first connection is still
                # being made (calls wait for it on the supervisor's path; a
                # plain actor's one name there is held by the call to cancel,
                # so a cancel sent that way was lost: seen under load in CI).
                _objects.call_direct(self._direct, self._actor_name, request, self._alive)
                return
            _c().actor_call(f"{self._actor_name}~where", request, 30000)
        except Exception:
            pass  # gone, or no way beside its calls: its get still says cancelled

    def __getattr__(self, method):
        # Ray's two methods every actor has: __ray_ready__ (True once its
        # constructor ran) and __ray_terminate__ (it ends after the calls
        # before it, as exit_actor(); a get of it raises ActorDiedError).
        if method.startswith("_") and method not in _EVERY_ACTORS_METHODS:
            raise AttributeError(method)
        # A handle that knows its class's methods refuses another name here,
        # as Ray's does (not at the call's get).
        methods = self.__dict__.get("_methods")
        if methods is not None and method not in methods and \
                method not in _EVERY_ACTORS_METHODS:
            raise AttributeError(f"'ActorHandle' object has no attribute {method!r} (actor "
                                 f"{self.__dict__.get('_actor_name')!r} has no such method)")
        return _Method(self, method)

    def __reduce__(self):
        # Passed to a task or another actor: the name and how to call it
        # (not this caller's connections and queue; the receiver's calls
        # are a caller of their own, and kill it by asking it to end).
        return (_handle, (self._actor_name, self._timeout, self._lanes, self._methods,
                          self._restartable, self._task_retries))

    def __repr__(self):
        return f"ActorHandle({self._actor_name!r})"


# The namespace (Ray's) this process's named actors are made and found in:
# init(namespace=) sets it, and the processes it starts (tasks, actors, its
# warm processes) inherit it ($ATL_NAMESPACE); "": the job's own, where every
# driver of the job finds the others' names, as before namespaces.
namespace = os.environ.get("ATL_NAMESPACE", "")


def _current_namespace():
    return namespace  # (get_actor's parameter of the same name hides it there)


def _qualified(name, ns=None):
    """The name an actor is registered under: NAMESPACE::NAME (the job's
    own namespace: NAME)."""
    ns = namespace if ns is None else ns
    return f"{ns}::{name}" if ns else name


def _unqualified(full):
    """(namespace, name) of a registered name."""
    ns, sep, name = full.rpartition("::")
    return (ns, name) if sep else ("", full)


# The job's runtime_env (Ray's, given to init()): the env_vars, working_dir
# and py_modules (directories on the Python path) of every process this one
# starts, and of theirs in turn ($ATL_RUNTIME_ENV); a call's own runtime_env
# is laid over it.
runtime_env = json.loads(os.environ.get("ATL_RUNTIME_ENV") or "{}")


def inherited_env():
    """What a process this one starts needs to share its namespace and the
    job's runtime_env."""
    env = {"ATL_NAMESPACE": namespace} if namespace else {}
    if runtime_env:
        env["ATL_RUNTIME_ENV"] = json.dumps(runtime_env)
        env.update(runtime_env.get("env_vars") or {})
    return env


def working_dir_of(o):
    """A process's working directory: the call's own, else the job's."""
    return o.get("working_dir") or runtime_env.get("working_dir")


# Actors this process killed: its later calls to them fail at once, as
# Ray's (the process may still be ending when the next call is made). By
# name and incarnation: an actor made again under the name (by this
# process, or found by get_actor after the kill) is a new one, whose calls
# go through; the killed one's handles still fail.
_killed = {}  # name -> the incarnation killed
_incarnations = {}  # name -> this process's latest incarnation of it (0: the first it saw)


def _was_killed(handle):
    return _killed.get(handle._actor_name) == handle._incarnation


def _a_new_one(name):
    """`name` is now another actor than one this process killed under it."""
    if name in _killed and _killed[name] == _incarnations.get(name, 0):
        _incarnations[name] = _killed[name] + 1

hosted_actor = None  # the @atl.remote class's actor this process hosts, by name
cancelled_calls = set()  # its calls atl.cancel named (ids)
current_call = threading.local()  # .id: the call this thread runs for it

_started = {}  # name -> task of the actors this driver started (atl.kill takes them by name)
_owned_actors = {}  # name -> task: those not detached, killed when this driver shuts down
_restarts = {}  # name -> _Restarts: the actors with max_restarts this process made (kept)


# In a detached actor's environment whose restarts the head keeps (its task
# is started again as it was when it ends other than by a kill).
HEAD_RESTARTS = "ATL_ACTOR_HEAD_RESTARTS"


def restarted_by_head():
    """Whether this process is a detached actor the head starts again."""
    return os.environ.get(HEAD_RESTARTS) == "1" and "ATL_TASK_ID" in os.environ


def end_for_good():
    """This process's actor is not to be started again (atl.kill, exit_actor,
    a constructor that failed at its first start): the head is told by the
    kill of its own task (which also ends this process). False where that
    could not be said (then the caller ends the process itself)."""
    if not restarted_by_head():
        return False
    try:
        _c().task_kill(int(os.environ["ATL_TASK_ID"]))
        return True
    except (AtlError, ValueError):
        return False


def _handle(name, timeout, lanes, methods, restartable=False, task_retries=0):
    """A handle unpickled in another process (see ActorHandle.__reduce__)."""
    handle = ActorHandle(name, None, timeout, lanes, methods)
    handle._restartable, handle._task_retries = restartable, task_retries
    return handle


def _wait_restarted(name, timeout=60.0):
    """After a call found actor `name` dead: whether it is back. The process
    that made it knows (its restarts); elsewhere the name coming back into
    the job's directory within `timeout` s says so."""
    restarts = _restarts.get(name)
    if restarts is not None:
        return restarts.wait_alive()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if name in _c_actor_names():
            return True
        time.sleep(0.05)
    return False


class _Restarts:
    """An actor with max_restarts, watched by the process that made it (as
    Ray's owner, through its GCS, restarts it): when its process ends (its
    pod lost, killed, or it exited) and it was not atl.kill-ed, it is made
    again, its constructor run with the same arguments, under the same name,
    at most max_restarts times (-1: without a limit). Calls wait while it is
    being made again (wait_alive)."""

    def __init__(self, maker, options, name, args, kwargs, lanes, group, handle):
        self._maker, self._options, self.name = maker, options, name
        self._args, self._kwargs, self._lanes, self._group = args, kwargs, lanes, group
        self._handle = handle
        self._limit = options.get("max_restarts", 0)
        self.used = 0
        self._cond = threading.Condition()
        self._restarting = False
        self._dead = False
        _restarts[name] = self
        threading.Thread(target=self._watch, daemon=True,
                         name=f"atl-restarts-{name}"[:60]).start()

    def expect_restart(self):
        """Its process is about to be ended (atl.kill(no_restart=False)):
        calls wait for the new one instead of going to the old."""
        with self._cond:
            if not self._dead:
                self._restarting = True
        self._handle._direct, self._handle._connecting = None, None

    def wait_alive(self):
        """Whether it is alive (waits while it is being made again)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._restarting or self._dead)
            return not self._dead

    def _watch(self):
        try:
            while True:
                task = _started.get(self.name)
                if task is None:
                    return
                _wait_for_end(task)
                if _started.get(self.name) is not task or _was_killed(self._handle):
                    return  # atl.kill, or this process shut down
                if self._limit != -1 and self.used >= self._limit:
                    return
                with self._cond:
                    self._restarting = True
                self.used += 1
                # Its old process's name leaves the directory first (the
                # head hears of its end), or the new one could not take it.
                deadline = time.monotonic() + 10
                while self.name in _c_actor_names() and time.monotonic() < deadline:
                    time.sleep(0.05)
                body = _refs.Body((self._maker._desc, self._args, self._kwargs, self.name,
                                   self._lanes, self._options.get("concurrency_groups") or {}),
                                  f"{self.name}: its restart")
                try:
                    new = self._maker._start(self._options, self.name, body, self._group,
                                             self._lanes, restarted=True)
                finally:
                    body.release()
                _started[self.name] = new._task
                if self.name in _owned_actors:
                    _owned_actors[self.name] = new._task
                self._handle._task = new._task
                self._handle._direct, self._handle._connecting = None, None
                with self._cond:
                    self._restarting = False
                    self._cond.notify_all()
        except BaseException as e:
            if self.name in _started:  # (not this process shutting down, nor atl.kill)
                print(f"atl: actor {self.name} could not be restarted: {e}", file=sys.stderr)
        finally:
            with self._cond:
                self._dead = True
                self._cond.notify_all()
            # (kept: a later call finds it dead for good at once)
            if self._group is not None:
                _remove_quietly(self._group)


def _wait_for_end(task):
    """Returns once an actor's process has ended (or its pod was lost, or
    this process's connection closed)."""
    while True:
        try:
            task.wait(timeout=None)
            return
        except GetTimeoutError:
            continue
        except AtlError:
            return


def _remove_when_ends(task, group):
    """An actor's own reservation, given back when its process ends."""
    _wait_for_end(task)
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


def get_actor(name: str, namespace: str | None = None, timeout: float = 0) -> ActorHandle:
    """The actor named `name` in `namespace` (default: this process's, see
    init(namespace=)). As Ray's: ValueError at once when there is none; with
    timeout= (seconds) it waits that long for one to appear (an actor another
    process is starting), then GetTimeoutError."""
    if namespace is not None:
        _options.check_namespace("atl.get_actor", namespace)
    ns = _current_namespace() if namespace is None else namespace
    full = _qualified(name, ns)
    where = f" in namespace {ns!r}" if ns else " in this job"
    deadline = time.monotonic() + timeout
    while True:
        actors = _c_actor_names()
        if full in actors:
            return handle_of(full, actors)
        if not timeout:
            raise ValueError(f"atl.get_actor: no actor named {name!r}{where} "
                             f"(atl.util.list_named_actors(all_namespaces=True) has the job's)")
        if time.monotonic() >= deadline:
            raise GetTimeoutError(5, f"no actor named {name!r}{where} after {timeout} s")
        time.sleep(0.02)


def handle_of(full, actors=None) -> ActorHandle:
    """A handle of the actor registered as `full` (NAMESPACE::NAME), with
    its lanes (its extra names for max_concurrency calls)."""
    actors = _c_actor_names() if actors is None else actors
    lanes = 1 + sum(1 for a in actors if a.startswith(full + "~") and a != full + "~where")
    _a_new_one(full)  # (atl.kill waited for a killed one's name to go)
    return ActorHandle(full, _started.get(full), lanes=lanes)


def list_named_actors(all_namespaces: bool = False) -> list:
    """As Ray's ray.util.list_named_actors: the names of this namespace's
    actors; all_namespaces=True: [{"name", "namespace"}] of the job's."""
    named = [_unqualified(a["name"]) for a in list_actors()]
    if all_namespaces:
        return [{"name": n, "namespace": ns} for ns, n in named]
    return [n for ns, n in named if ns == namespace]


def kill(actor: ActorHandle, *, no_restart: bool = True) -> None:
    """Ends an actor started from an @atl.remote class (its process), by
    this driver or another. no_restart=False (as Ray's): one with
    max_restarts is made again, as after any other end of its process."""
    restarts = _restarts.get(actor._actor_name)
    if not no_restart and restarts is not None:
        task = _started.get(actor._actor_name)
        if task is not None:
            restarts.expect_restart()  # calls from now on wait for the new process
            task.kill()  # its watcher makes it again
            return
    if not no_restart and restarts is None and (actor._restartable or actor._task is None):
        # Restarted by the head (a detached actor's), or by a maker that is
        # another process: it ends itself, and is made again as after any
        # other end of its process.
        _ask_to_end(actor, restart=True)
        actor._direct, actor._connecting = None, None
        return
    if actor._task is None and _started.get(actor._actor_name) is not None:
        actor._task = _started[actor._actor_name]
    if actor._task is None:
        # Started by another process: asked to end itself (an @atl.remote
        # class's process does; a host_actor handler's host closes it).
        _ask_to_end(actor, restart=False)
        _killed[actor._actor_name] = actor._incarnation
        _started.pop(actor._actor_name, None)
        _wait_name_gone(actor._actor_name)
        return
    _killed[actor._actor_name] = actor._incarnation
    task = _started.pop(actor._actor_name, None) or actor._task
    _owned_actors.pop(actor._actor_name, None)
    try:
        task.kill()
    except AtlError as e:
        if "ended already" not in str(e):
            raise  # (an actor whose process ended already: nothing to do, as Ray's)
    _wait_name_gone(actor._actor_name)


def _wait_name_gone(name, timeout=10.0):
    """Until a killed actor's name has left the job's directory (its process
    ended; a stuck one is waited for `timeout` s at most): then, as after
    Ray's kill, get_actor finds no actor there and a new one can take it."""
    deadline = time.monotonic() + timeout
    try:
        while name in _c_actor_names() and time.monotonic() < deadline:
            time.sleep(0.01)
    except AtlError:
        pass  # this process's connection is going: nothing to wait for


def _ask_to_end(actor, restart):
    """An actor's process asked to end itself ("exit"); restart=False: for
    good (one the head restarts tells it not to)."""
    try:
        # (under the name no call holds, where it has one; ActorHandle's
        # own call: a method of the actor's may be named `call`)
        request = pickle.dumps(("exit", "restart" if restart else None, None))
        try:
            _c().actor_call(f"{actor._actor_name}~where", request, 30000)
        except AtlError:
            ActorHandle.call(actor, request, timeout=30)
    except AtlError as e:
        if not (e.code == FAILED or "no actor named" in str(e)):
            raise  # (FAILED: it died as it answered, as asked)


_sender_lock = threading.Lock()  # not _lock: the warm pool's threads come here


class _Sender:
    """One caller's calls to one actor, started in the order they were made
    (Ray's guarantee for a caller's calls to an actor): a queue drained by at
    most `width` threads at once. Width 1 (an actor with max_concurrency 1)
    runs each call once the one before it has ended, so the actor sees them
    in order; a threaded or async actor's calls start in order and run
    together, as Ray's. The threads are daemons, started when calls come and
    ended when none are left: a driver that ends with a call still running
    exits (with its own code) instead of waiting on it."""

    def __init__(self, width, name):
        import collections
        self._width = max(1, width)
        self._name = name
        self._lock = threading.Lock()
        self._queue = collections.deque()
        self._running = 0
        with _senders_lock:
            _senders.add(self)

    def pending(self):
        """Calls queued or under way (at most: a thread about to find the
        queue empty still counts)."""
        with self._lock:
            return len(self._queue) + self._running

    def submit(self, fn):
        future = _refs.new_future()
        with self._lock:
            self._queue.append((fn, future))
            if self._running < self._width:
                self._running += 1
                threading.Thread(target=self._drain, daemon=True,
                                 name=f"atl-call-{self._name}"[:60]).start()
        return future

    def _drain(self):
        while True:
            with self._lock:
                if not self._queue:
                    self._running -= 1
                    return
                fn, future = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as e:
                future.set_exception(e)


_senders = weakref.WeakSet()  # this process's caller queues (drain_calls)
_senders_lock = threading.Lock()


def drain_calls(timeout):
    """Waits until every actor call this process made has been answered, at
    most `timeout` seconds; the number still waiting. A task's process does
    this after it returned, before it ends: its calls made and not waited
    for (`counter.add.remote(1)`, Ray's fire and forget) run in its queues'
    threads, which end with the process."""
    deadline = time.monotonic() + timeout
    while True:
        with _senders_lock:
            senders = list(_senders)
        pending = sum(sender.pending() for sender in senders)
        if pending == 0 or time.monotonic() >= deadline:
            return pending
        time.sleep(0.005)


# Names an actor takes calls under through the supervisor, at most: calls go
# there only until the caller's straight connection is up (or where it cannot
# be), and each name is a thread of the library.
MAX_NAMES = 16

ASYNC_CONCURRENCY = 1000
# Calls one caller has under way to one actor at most: each a thread here and
# a connection to the actor's process (which serves 1024 from one address):
# as many as an actor takes at once (an async actor's 1000, as Ray's), so
# calls that wait on each other (waiters and the call that frees them)
# never wait behind one another.
MAX_CALLS_AT_ONCE = ASYNC_CONCURRENCY


def _check_groups(cls, groups, label):
    """A method's concurrency_group is one of the actor's concurrency_groups."""
    for method, o in _method_table(cls).items():
        group = o.get("concurrency_group")
        if group is not None and group not in groups:
            raise ValueError(f"{label}: method {method} is in concurrency group {group!r}, "
                             f"which the actor's concurrency_groups "
                             f"({sorted(groups) or 'none'}) do not name")


def _is_async(cls):
    """Whether `cls` is an async actor's class (an `async def` method or
    async generator), as Ray decides."""
    return any(inspect.iscoroutinefunction(getattr(cls, n, None)) or
               inspect.isasyncgenfunction(getattr(cls, n, None)) for n in dir(cls)
               if not n.startswith("__"))


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

    def bind(self, *args, **kwargs):
        """The actor's creation as a node of a graph (Ray's DAG API,
        atl.dag): made anew each time the graph is executed; its methods'
        .bind(...) are calls on it."""
        from .dag import ClassNode
        return ClassNode(self, args, kwargs, {})

    def get_or_create(self, *args, **kwargs):
        """The actor named by options(name=...) if it exists (its arguments
        then unused), else a new one with these: as Ray's."""
        if not self._options.get("name"):
            raise UsageError(USAGE, f"{self.__name__}.get_or_create: name the actor "
                                    f"(.options(name=...))")
        return self.options(get_if_exists=True).remote(*args, **kwargs)

    def remote(self, *args, **kwargs):
        """Starts the actor in a process on a worker (in a bundle with
        placement_group=, on pod=, else the least busy) and returns its handle
        once it answers. name= names it (default: a unique one)."""
        inside = captured(self._options)
        if inside is not None:  # its maker's group captures it
            clone = ActorClass(self._cls, inside, checked=True)
            clone._desc = self._desc
            return clone.remote(*args, **kwargs)
        o = self._options
        label = f"{self.__name__}.remote"
        if (o.get("detached") or o.get("get_if_exists")) and not o.get("name"):
            raise UsageError(USAGE, f"{label}: a detached actor, or one got if it exists, needs "
                                    f"a name (name=...)")
        if o.get("name") and "::" in o["name"]:
            raise UsageError(USAGE, f"{label}: name={o['name']!r}: '::' separates a namespace "
                                    f"from a name here: give namespace= instead")
        if o.get("get_if_exists"):
            try:
                return get_actor(o["name"], o.get("namespace"))
            except ValueError:
                pass  # none yet: made here (a racing maker's name is taken: refused)
        # Registered as NAMESPACE::NAME in a namespace (its own, or this process's).
        name = _qualified(o["name"], o.get("namespace")) if o.get("name") else \
            f"{self.__name__}-{uuid.uuid4().hex[:12]}"
        if o.get("demand"):
            _check_feasible(o, label)
        for ref in _refs.pending((args, kwargs)):
            ref._get(None)
        # An async actor (an `async def` method) takes Ray's default of 1000
        # calls at once; any other, one at a time.
        lanes = o.get("max_concurrency") or (ASYNC_CONCURRENCY if _is_async(self._cls) else 1)
        # Each concurrency group's calls at once on top of the default's.
        groups = o.get("concurrency_groups") or {}
        _check_groups(self._cls, groups, label)
        lanes += sum(groups.values())
        if self._desc is None:
            self._desc = _serialize.encode_class(self._cls)
        body = _refs.Body((self._desc, args, kwargs, name, lanes, groups), label)
        group = None
        try:
            if o.get("demand") and not o.get("placement_group"):
                # Its own reservation, for as long as it lives.
                group = _reserve(o["demand"], None, label, o.get("start_timeout", 60))
                if o.get("detached"):
                    _disown(group)  # it outlives this driver, and holds its place meanwhile
            handle = self._start(o, name, body, group, lanes, restarted=False)
        except TaskError as e:
            # Its constructor raised: as Ray's, the actor is dead from the
            # start and each call to it says why (ActorDiedError).
            if group is not None:
                _remove_quietly(group)
            handle = ActorHandle(name, None, lanes=lanes, methods=_method_table(self._cls))
            handle._creation_error = e
            return handle
        except BaseException:
            if group is not None:
                _remove_quietly(group)
            raise
        finally:
            body.release()
        handle._lanes = lanes
        handle._know(_method_table(self._cls))
        if not o.get("detached"):
            _owned_actors[name] = handle._task
        if o.get("max_restarts"):
            handle._restartable = True
            handle._task_retries = o.get("max_task_retries", 0)
            if not o.get("detached"):
                _Restarts(self, o, name, args, kwargs, lanes, group, handle)  # gives the group back
            # (a detached one's are the head's: they go on once this process is gone)
        elif group is not None and not o.get("detached"):  # (a detached one's: the head's)
            threading.Thread(target=_remove_when_ends, args=(handle._task, group),
                             daemon=True, name="atl-actor-group").start()
        return handle

    def _start(self, o, name, body, group, lanes, restarted=False):
        # A detached actor outlives this driver, so not one of its warm
        # processes; a restart starts one of its own (it knows it is one).
        own = not (o.get("detached") or lanes > 1 or restarted)
        pod = None
        if group is not None and own and _warm_fits(o):
            pod = group.bundle_nodes[0]  # a warm process on its reservation's pod
        warm = own and (not _placed(o) or pod is not None)
        pool = _warm_pool() if warm else None
        worker = pool.take_idle(pod) if pool is not None else None
        if worker is not None:
            return self._become(pool, worker, name, body)
        payload = base64.b64encode(pickle.dumps((body.wire, _refs.result_slot()))).decode("ascii")
        pg, bundle, pod = (group, 0, None) if group is not None else _where(o)
        env = dict(inherited_env(), **placement_env(o, bundle), **(o.get("env") or {}))
        if restarted:
            env["ATL_ACTOR_RESTARTED"] = "1"  # was_current_actor_reconstructed
        env.update(_payload_env("ATL_ACTOR_PAYLOAD", payload))
        env["PYTHONPATH"] = _python_path(o)
        env["ATL_WORKERS_PER_NODE"] = "0"  # its own atl.init() starts no warm processes
        command = f"exec {sys.executable} -m atl._worker actor"
        if o.get("detached"):
            # It outlives this driver from its start (the head stops a
            # driver's other tasks when it goes); with max_restarts the head
            # starts it again as it was, whoever made it (Ray's GCS does).
            from . import Task
            head_restarts = o.get("max_restarts", 0)
            if head_restarts:
                env[HEAD_RESTARTS] = "1"
            gid = pg.id if pg is not None else 0
            # Its own reservation (group) is the head's to give back at its end.
            task = Task(_c().task_start(command, gid, bundle if gid else -1, pod, env,
                                        working_dir_of(o), detached=True,
                                        restarts=head_restarts, own_group=group is not None))
        else:
            task = run(command, placement_group=pg, bundle_index=bundle, pod=pod, env=env,
                       working_dir=working_dir_of(o))
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
        _a_new_one(name)
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
        _a_new_one(name)
        handle = ActorHandle(name, worker.task)
        if isinstance(where, str):
            handle._direct = where
        return handle
