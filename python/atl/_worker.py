"""What runs on a worker for the Python package:
  python -m atl._worker        a remote function's task (cold): decodes the call from
                               $ATL_TASK_PAYLOAD_0.. (base64, in pieces), runs it, and hands
                               back its outcome (atl._refs.outcome_of: the value inline, or
                               pushed to the caller's object server when big, or the error)
                               as the task's result on the control channel ($ATL_CONTROL_FD);
  python -m atl._worker actor  an actor started cold: hosts the class's instance;
  python -m atl._worker pool   a warm process of the driver's pool (see atl._workerpool).
A call's arguments come inline or as an object of the caller's (atl._refs.Body);
top-level ObjectRef arguments reach the function as their values."""
import base64
import inspect
import os
import pickle
import sys
import time

from . import _errors, _objects, _refs, _serialize


def take_payload(prefix):
    """The payload the driver split into PREFIX_0.. (see atl._payload_env), or None."""
    parts = os.environ.pop(prefix + "_PARTS", None)
    if parts is None:
        return None
    return "".join(os.environ.pop(f"{prefix}_{k}") for k in range(int(parts)))


def _send_result(outcome):
    data = base64.b64encode(pickle.dumps(outcome)).decode("ascii")
    line = ("result " + data + "\n").encode("ascii")
    fd = int(os.environ["ATL_CONTROL_FD"])
    while line:
        line = line[os.write(fd, line):]


def _call(fn, args, kwargs, result_to=None):
    args, kwargs = _refs.resolve(args, kwargs)
    value = fn(*args, **kwargs)
    if inspect.isgenerator(value):  # a generator's items, for its caller's refs
        return _refs.Yielded.of(value, result_to)
    return value


def _ok(value):
    return pickle.dumps(("ok", _objects.inline(_objects.dumps(value))))


def _actor_handler(instance, name, lanes, groups=None):
    """Each call: pickle(("call", body, result_to, call_id, group)), body
    (method, args, kwargs) -> pickle(outcome), whether it came through the
    supervisor or straight to this process's object server; at most `lanes`
    at once in all: each concurrency group's (`groups`: name -> calls at
    once) within its own limit, the rest (max_concurrency) within the
    default group's. A call's group is the one it names (.options), else its
    method's (@method(concurrency_group=)), else the default.
    ("where", ...): that server's address, for callers to come straight;
    ("exit", ...): the process ends (SIGTERM)."""
    import threading
    from . import _actors
    _actors.hosted_actor = name  # (this module may be __main__: not where others look)
    groups = groups or {}
    gates = {g: threading.BoundedSemaphore(n) for g, n in groups.items()}
    gates[None] = threading.BoundedSemaphore(max(1, lanes - sum(groups.values())))

    def gate_of(method, group):
        if group is None:
            fn = getattr(type(instance), method, None)
            group = getattr(fn, "__atl_method_options__", {}).get("concurrency_group")
        if group not in gates:
            raise ValueError(f"{name}.{method}: concurrency group {group!r} is not one of the "
                             f"actor's ({sorted(g for g in gates if g) or 'none'})")
        return gates[group]
    loop = []  # an async actor's event loop, on a thread of its own, made at its first call
    loop_lock = threading.Lock()

    def event_loop():
        with loop_lock:
            if not loop:
                import asyncio
                loop.append(asyncio.new_event_loop())
                threading.Thread(target=loop[0].run_forever, daemon=True,
                                 name="atl-actor-loop").start()
            return loop[0]

    is_async = _actors._is_async(type(instance))

    def invoke(fn, args, kwargs, call_id=None, result_to=None):
        if not is_async:
            return _call(fn, args, kwargs, result_to)
        # An async actor: every method on its one event loop, as Ray's, so
        # its calls interleave at their awaits and a plain method touches
        # its asyncio objects from the loop's thread (this thread waits).
        import asyncio
        args, kwargs = _refs.resolve(args, kwargs)
        if call_id in _actors.cancelled_calls:  # cancelled before it began
            raise asyncio.CancelledError()
        if inspect.isasyncgenfunction(fn):
            # An async generator: each item taken on the loop, handed on (to
            # a streaming caller as it comes) from this thread.
            agen = fn(*args, **kwargs)

            def items():
                while True:
                    step = asyncio.run_coroutine_threadsafe(agen.__anext__(), event_loop())
                    if call_id is not None:
                        running[call_id] = step
                    try:
                        yield step.result()
                    except StopAsyncIteration:
                        return
                    finally:
                        running.pop(call_id, None)
            return _refs.Yielded.of(items(), result_to)
        if inspect.iscoroutinefunction(fn):
            coroutine = fn(*args, **kwargs)
        else:
            async def plain():
                return _call(fn, args, kwargs, result_to)
            coroutine = plain()
        future = asyncio.run_coroutine_threadsafe(coroutine, event_loop())
        if call_id is not None:
            running[call_id] = future
        try:
            return future.result()
        finally:
            running.pop(call_id, None)

    running = {}  # call id -> the future of an async method's run on the loop

    def handle(request):
        kind, body, result_to, *rest = pickle.loads(request)
        call_id = rest[0] if rest else None
        group = rest[1] if len(rest) > 1 else None
        if kind == "cancel":  # atl.cancel of a call under way (see ActorHandle._cancel)
            _actors.cancelled_calls.add(call_id)
            future = running.get(call_id)
            if future is not None:
                future.cancel()  # CancelledError at the coroutine's await
            return _ok(None)
        if kind == "exit":  # atl.kill from a process that did not start it
            import signal

            def end():
                # For good (body None): one the head restarts says so first.
                if body == "restart" or not _actors.end_for_good():
                    os.kill(os.getpid(), signal.SIGTERM)
            threading.Timer(0.05, end).start()
            return _ok(None)
        if kind == "where":
            return _ok(_objects.serve_actor(name, handle))

        held = []  # its group's gate, held until its value is sent (as the call's own)

        def run():
            method, margs, mkwargs = _refs.unpack(body)
            gate = gate_of(method, group)
            gate.acquire()
            held.append(gate)
            _actors.current_call.id = call_id
            try:
                if method == "__ray_ready__":
                    return True
                if method == "__ray_terminate__":
                    from .actor import exit_actor
                    exit_actor()
                return invoke(getattr(instance, method), margs, mkwargs, call_id, result_to)
            finally:
                _actors.current_call.id = None
                _actors.cancelled_calls.discard(call_id)
        try:
            return pickle.dumps(_refs.outcome_of(run, result_to))
        finally:
            for gate in held:
                gate.release()
    return handle


def host_actor():
    """An actor: the class's instance, hosted under its name until killed."""
    import signal
    import threading

    import atl
    payload = take_payload("ATL_ACTOR_PAYLOAD")
    body, result_to = pickle.loads(base64.b64decode(payload))
    atl.init()
    try:
        cls_desc, args, kwargs, name, lanes, groups = _refs.unpack(body)
        instance = _call(_serialize.decode_class(cls_desc), args, kwargs)
    except BaseException as e:  # the driver raises it as its own type
        _send_result(_errors.error_outcome(e))
        if "ATL_TASK_RESTARTS" not in os.environ:
            # Its first start: the maker raises the error, and the head does
            # not start it again (as Ray's: a creation that failed is final).
            from . import _actors
            _actors.end_for_good()
        return 1

    hosts = host_lanes(atl, name, lanes, _actor_handler(instance, name, lanes, groups))
    print(f"actor {name} ready", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    # With a timeout: a SIGTERM the kernel hands to one of libatl's threads
    # only flags the handler, which runs when this thread next wakes (an
    # endless wait would sleep through it until SIGKILL).
    while not done.wait(0.5):
        pass
    for host in hosts:
        host.close()
    atl.shutdown()
    return 0


from ._actors import MAX_NAMES  # noqa: E402  (the names an actor is hosted under)


def host_lanes(atl, name, lanes, handler):
    """The actor under `name` and, for max_concurrency=n, up to n-1 more
    names (name~1..; MAX_NAMES in all): each is hosted on a thread of its
    own, so that many calls run at once through the supervisor (straight to
    the process, n at once). The main name last: once it is listed, every
    lane takes calls."""
    where = []
    if lanes > 1:
        # "where" (this process's object server, for callers to come
        # straight) and "exit" under a name no call holds.
        where = [atl.host_actor(f"{name}~where", handler)]  # (callers send "where", "exit")
    return where + \
        [atl.host_actor(f"{name}~{k}", handler) for k in range(1, min(lanes, MAX_NAMES))] + \
        [atl.host_actor(name, handler)]


def pool_worker():
    """A warm process of a driver's pool (see atl._workerpool): hosts
    $ATL_POOL_NAME, says so to $ATL_POOL_REGISTRY, then runs
    ("run", body, result_to) calls (body: function, args, kwargs) one after
    another until it is asked to ("become", body, result_to) an actor (body:
    class, args, kwargs, name): it then hosts that actor and leaves the pool.
    SIGTERM ends it at once, mid-call too."""
    import signal
    import threading

    import atl
    name = os.environ["ATL_POOL_NAME"]
    registry = os.environ["ATL_POOL_REGISTRY"]
    signal.signal(signal.SIGTERM, lambda *_: os._exit(128 + signal.SIGTERM))
    atl.init()
    hosts = {}

    def leave_pool():
        hosts.pop("pool").close()

    def handle(request):
        kind, body, result_to, *rest = pickle.loads(request)
        if kind == "run":
            def run():
                fn_desc, args, kwargs = _refs.unpack(body)
                from . import _actors
                _actors.current_call.resources = rest[0] if rest else {}  # (its lease's)
                try:
                    return _call(_serialize.decode_function(fn_desc), args, kwargs, result_to)
                finally:
                    _actors.current_call.resources = None
            return pickle.dumps(_refs.outcome_of(run, result_to))
        if kind == "become":
            def become():
                cls_desc, args, kwargs, actor_name, lanes, groups = _refs.unpack(body)
                instance = _call(_serialize.decode_class(cls_desc), args, kwargs)
                handler = _actor_handler(instance, actor_name, lanes, groups)
                hosts["actor"] = host_lanes(atl, actor_name, lanes, handler)
                # Not from this handler's own thread: closing waits for its call to end.
                threading.Thread(target=leave_pool, daemon=True).start()
                # Where its method calls go straight (saves the first call's "where").
                return _objects.serve_actor(actor_name, handler)
            return pickle.dumps(_refs.outcome_of(become, result_to))
        return pickle.dumps(("err", "ValueError", f"unknown request {kind!r}", None))

    # Its object server up and cloudpickle imported now, while it is not
    # yet taken, not on the first call's or actor's clock.
    _objects.address()
    _objects._pickler()
    hosts["pool"] = atl.host_actor(name, handle)
    atl.ActorHandle(registry).call(f"ready {name}".encode(), timeout=30)
    while True:  # woken twice a second: the SIGTERM handler runs (see host_actor)
        time.sleep(0.5)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "actor":
        return host_actor()
    if len(sys.argv) > 1 and sys.argv[1] == "pool":
        return pool_worker()
    payload = take_payload("ATL_TASK_PAYLOAD")
    if payload is None:
        print("atl worker: no ATL_TASK_PAYLOAD_PARTS (started outside atl?)", file=sys.stderr)
        return 2
    body, result_to = pickle.loads(base64.b64decode(payload))

    def run():
        fn_desc, args, kwargs = _refs.unpack(body)
        return _call(_serialize.decode_function(fn_desc), args, kwargs, result_to)
    outcome = _refs.outcome_of(run, result_to)
    _send_result(outcome)
    # Its actor calls not waited for (Ray's fire and forget: a warm Ray
    # worker lives on and sends them) are made before the process ends.
    from . import _actors
    left = _actors.drain_calls(_CALLS_AFTER_RETURN_S)
    if left:
        print(f"atl worker: {left} actor call(s) this task made were still unanswered "
              f"{_CALLS_AFTER_RETURN_S} s after it returned: they end with its process",
              file=sys.stderr, flush=True)
    return 1 if outcome[0] == "err" else 0


# How long a task's process waits, after it returned, for the actor calls it
# made to be answered.
_CALLS_AFTER_RETURN_S = 60


if __name__ == "__main__":
    sys.exit(main())
