"""Remote functions: @atl.remote on a function. A call runs on a warm
process (no placement of its own) or as a task (a fresh process in its
bundle, on its pod, in its own reservation), from the caller's thread or,
when it waits for refs, a reservation or retries, from a thread of its own."""
import base64
import inspect
import os
import pickle
import sys
import threading

from . import _options, _refs, _serialize
from . import _payload_env, _warm_pool, nodes, run
from ._capi import AtlError, GetTimeoutError, UsageError
from ._errors import OwnerDiedError, RemoteError, TaskError
from ._placement import (_check_feasible, _leases, _remove_quietly, _reserve, captured,
                         placement_env)
from ._refs import ObjectRef


def _placed(options):
    """Whether a call's options ask for a place or a process of its own."""
    return any(options.get(k) for k in ("placement_group", "pod", "env", "working_dir", "spread",
                                        "demand", "max_calls", "py_modules"))


def _warm_fits(options):
    """Whether a call whose only place is its own reservation can run in a
    warm process on the reservation's pod: not with GPUs (a fresh process
    sees only its bundle's, by CUDA_VISIBLE_DEVICES), nor with max_calls (a
    process of its own for each call)."""
    return options.get("demand") and not options["demand"].get("GPU") and not any(
        options.get(k) for k in ("placement_group", "pod", "env", "working_dir", "spread",
                                 "max_calls", "py_modules"))


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


def _python_path(options=None):
    # The call's and the job's py_modules' directories (runtime_env), the
    # package itself, then the driver's own path: functions of the driver's
    # modules travel by reference and import there as here (pods share the
    # image; a job's working_dir is the same on every pod).
    from ._actors import runtime_env
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    own = list((options or {}).get("py_modules") or []) + \
        list(runtime_env.get("py_modules") or [])
    parts = own + [here] + [p for p in sys.path if p and os.path.isdir(p)]
    return os.pathsep.join(dict.fromkeys(parts))


class RemoteFunction:
    def __init__(self, fn, options, checked=False):
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            # As Ray refuses it: a task's process runs no event loop for it.
            raise ValueError(f"remote function {getattr(fn, '__name__', fn)}: 'async def' "
                             f"should not be used for remote tasks: wrap the coroutine with "
                             f"asyncio.run(...) in a plain function, or make it an async "
                             f"actor's method")
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
        if "max_calls" in options:  # as Ray: the function's, at @remote
            raise ValueError("Setting 'max_calls' is not supported in '.options()'.")
        clone = RemoteFunction(self._fn, _options.merge(
            self._options, options, f"{self.__name__}.options", actor=False), checked=True)
        clone._desc = self._desc
        return clone

    def bind(self, *args, **kwargs):
        """The call as a node of a graph (Ray's DAG API, atl.dag), made when
        the graph is executed."""
        from .dag import FunctionNode
        return FunctionNode(self, args, kwargs, {})

    def remote(self, *args, **kwargs):
        """A ref to the call's value (num_returns=n: a list of n refs). Refs
        among the arguments: the call is sent once their values are there."""
        if self._desc is None:
            self._desc = _serialize.encode_function(self._fn)
        inside = captured(self._options)
        if inside is not None:  # its caller's group captures it
            clone = RemoteFunction(self._fn, inside, checked=True)
            clone._desc = self._desc
            return clone.remote(*args, **kwargs)
        o = self._options
        waiting = _refs.pending((args, kwargs))
        if o.get("demand"):
            _check_feasible(o, f"{self.__name__}.remote")
        generator = inspect.isgeneratorfunction(self._fn)
        # A streaming generator's items come to this slot as they are yielded.
        slot = _refs.result_slot(stream=True, backpressure=o.get("backpressure")) \
            if _refs.is_streaming(o.get("num_returns"), generator) else None
        if _warm_fits(o) and not waiting and not o.get("max_retries"):
            ref = self._leased(args, kwargs, slot)
        elif waiting or o.get("demand") or o.get("max_retries"):
            ref = self._in_background(waiting, args, kwargs, slot)
        else:
            ref = self._submit(args, kwargs, slot=slot)
        return _refs.shaped(ref, o.get("num_returns"), generator, slot)

    def _leased(self, args, kwargs, slot=None):
        """A call on a lease of its shape (num_cpus=...), queued until one is
        free: no thread of its own; the lease goes to the next call when it
        ends."""
        o, label = self._options, self.__name__
        need = o["demand"]
        source = _refs._Call(_refs.new_future())
        source.cancelled = False
        source.why = f"waiting for a pod that can hold {need}"
        epoch = _leases.epoch

        def fail(e):
            if not source.future.done():
                source.future.set_exception(e)

        def start(group):
            if source.cancelled:
                _leases.give(group, need, True, epoch)
                return fail(RemoteError(f"{label}: cancelled before it started"))
            source.why = None
            try:
                source.inner = self._submit(args, kwargs, group, slot)
            except BaseException as e:
                _leases.give(group, need, not _system_failure(e), epoch)
                return fail(e)
            inner = source.inner._future
            if inner is None:  # a fresh process (its pod has no warm one): waited for
                def wait():
                    try:
                        value = source.inner._get(None)
                    except BaseException as e:
                        _leases.give(group, need, not _system_failure(e) and
                                     not source.cancelled, epoch)
                        return fail(e)
                    _leases.give(group, need, not source.cancelled, epoch)
                    source.future.set_result(value)
                threading.Thread(target=wait, daemon=True, name="atl-call").start()
                return

            def ended(f):
                # On the pool's thread that settled it (never under its
                # lock): the next queued call starts from here.
                e = f.exception()
                _leases.give(group, need, not source.cancelled and
                             (e is None or not _system_failure(e)), epoch)
                if e is not None:
                    fail(e)
                elif not source.future.done():
                    source.future.set_result(f.result())
            inner.add_done_callback(ended)

        _leases.run(need, start, fail)
        return ObjectRef(label, source)

    def _in_background(self, waiting, args, kwargs, slot=None):
        """The call from a thread of its own: after the refs it takes, in a
        reservation of its own (num_cpus...), run again after its process
        died (max_retries) or it raised (retry_exceptions)."""
        o, label = self._options, self.__name__
        source = _refs._Call(_refs.new_future())
        source.cancelled = False

        def go():
            group, leased, healthy = None, _warm_fits(o), True
            epoch = _leases.epoch
            try:
                for ref in waiting:
                    ref._get(None)
                if o.get("demand") and not o.get("placement_group"):
                    # A warm process's call leases a reservation kept between
                    # calls; a fresh process's (GPUs) has one of its own.
                    group = (_leases.take if leased else _reserve)(o["demand"], source, label)
                    source.why = None
                left = o.get("max_retries", 0)
                while True:
                    source.inner = self._submit(args, kwargs, group, slot)
                    try:
                        value = source.inner._get(None)
                        break
                    except BaseException as e:
                        healthy = not _system_failure(e)
                        retry = not healthy or (isinstance(e, TaskError) and _retries_on(o, e))
                        if not retry or left == 0 or source.cancelled:
                            raise
                        left -= 1 if left > 0 else 0
                source.future.set_result(value)
            except BaseException as e:
                source.future.set_exception(e)
            finally:
                if group is not None and leased:
                    _leases.give(group, o["demand"], healthy and not source.cancelled, epoch)
                elif group is not None:
                    _remove_quietly(group)
        threading.Thread(target=go, daemon=True, name="atl-call").start()
        return ObjectRef(label, source)

    def _submit(self, args, kwargs, group=None, slot=None):
        o = self._options
        pool, pod = None, None
        if not _placed(o):
            pool = _warm_pool()
        elif group is not None and _warm_fits(o):
            # Its own reservation (num_cpus=...): run in a warm process on the
            # reservation's pod, as Ray's workers take such calls, not a new
            # process each.
            pool, pod = _warm_pool(), group.bundle_nodes[0]
            if pool is not None and not pool.has_pod(pod):
                pool = None
        body = _refs.Body((self._desc, args, kwargs), f"{self.__name__}.remote")
        result_to = slot or _refs.result_slot()
        if pool is not None:
            cpus = (o.get("demand") or {}).get("CPU", 0 if o.get("demand") else 1)
            future = pool.submit(pickle.dumps(("run", body.wire, result_to, o.get("demand") or {})),
                                 self.__name__, pod, cpus)
            future.add_done_callback(lambda _: body.release())
            return ObjectRef(self.__name__, _refs._Call(future))
        payload = base64.b64encode(pickle.dumps((body.wire, result_to))).decode("ascii")
        from ._actors import inherited_env, working_dir_of
        pg, bundle, pod = (group, 0, None) if group is not None else _where(o)
        env = dict(inherited_env(), **placement_env(o, bundle), **(o.get("env") or {}))
        env.update(_payload_env("ATL_TASK_PAYLOAD", payload))
        env["PYTHONPATH"] = _python_path(o)
        env["ATL_WORKERS_PER_NODE"] = "0"  # its own atl.init() starts no warm processes
        command = f"exec {sys.executable} -m atl._worker"
        try:
            task = run(command, placement_group=pg, bundle_index=bundle, pod=pod, env=env,
                       working_dir=working_dir_of(o))
        except BaseException:
            body.release()
            raise
        return ObjectRef(self.__name__, _refs._Task(task, keep=body, result_oid=result_to[1]))

    def __call__(self, *args, **kwargs):
        raise TypeError(f"remote function {self.__name__} is called with "
                        f"{self.__name__}.remote(...)")
