"""What runs on a worker for the Python package:
  python -m atl._worker        a remote function's task (cold): decodes the call from
                               $ATL_TASK_PAYLOAD_0.. (base64, in pieces), runs it, and hands
                               back ("ok", value) or ("err", type, traceback) as the task's
                               result on the control channel ($ATL_CONTROL_FD);
  python -m atl._worker actor  an actor started cold: hosts the class's instance;
  python -m atl._worker pool   a warm process of the driver's pool (see atl._workerpool)."""
import base64
import os
import pickle
import sys
import time
import traceback

from . import _serialize


def take_payload(prefix):
    """The payload the driver split into PREFIX_0.. (see atl._payload_env), or None."""
    parts = os.environ.pop(prefix + "_PARTS", None)
    if parts is None:
        return None
    return "".join(os.environ.pop(f"{prefix}_{k}") for k in range(int(parts)))


def _send_result(obj):
    data = base64.b64encode(pickle.dumps(obj)).decode("ascii")
    line = ("result " + data + "\n").encode("ascii")
    fd = int(os.environ["ATL_CONTROL_FD"])
    while line:
        line = line[os.write(fd, line):]


def host_actor():
    """An actor: the class's instance, hosted under its name until killed.
    Each call is pickle((method, args, kwargs)) -> pickle(("ok", value) | ("err", ...))."""
    import signal
    import threading

    import atl
    payload = take_payload("ATL_ACTOR_PAYLOAD")
    cls_desc, args, kwargs, name = pickle.loads(base64.b64decode(payload))
    try:
        instance = _serialize.decode_class(cls_desc)(*args, **kwargs)
    except BaseException as e:  # the driver raises it as its own type
        _send_result(_error(e))
        return 1

    atl.init()
    host = atl.host_actor(name, _actor_handler(instance))
    print(f"actor {name} ready", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    # With a timeout: a SIGTERM the kernel hands to one of libatl's threads
    # only flags the handler, which runs when this thread next wakes (an
    # endless wait would sleep through it until SIGKILL).
    while not done.wait(0.5):
        pass
    host.close()
    atl.shutdown()
    return 0


# A result over this does not go back (as a task's: the supervisor keeps 8 MiB of it).
_MAX_RESULT = 6 * 1024 * 1024
# The exception itself goes back with its traceback when it pickles this small.
_MAX_EXCEPTION = 64 * 1024


def _error(e, text=None):
    """("err", type name, traceback, the exception pickled or None): the
    caller raises it as its own type (atl.TaskError and the original class).
    cloudpickle where the image has it (a class defined in the driver's
    __main__ travels by value), else pickle; an exception that does not
    pickle goes as its name and traceback only."""
    pickled = None
    try:
        try:
            import cloudpickle as dumper
        except ImportError:
            dumper = pickle
        # Its class, args and attributes, not the instance: unpickling an
        # instance calls its __init__ with its args, which fails for a class
        # whose __init__ takes other arguments than it passes to Exception.
        pickled = dumper.dumps((type(e), e.args, dict(getattr(e, "__dict__", {}))))
        if len(pickled) > _MAX_EXCEPTION:
            pickled = None
    except Exception:
        pickled = None
    return ("err", type(e).__name__, text if text is not None else traceback.format_exc(), pickled)


def _outcome(run):
    """pickle(("ok", run())) or pickle(("err", type, traceback))."""
    try:
        reply = pickle.dumps(("ok", run()))
    except BaseException as e:
        return pickle.dumps(_error(e))
    if len(reply) > _MAX_RESULT:
        return pickle.dumps(("err", "ValueError", f"the result takes {len(reply)} bytes pickled, "
                             f"over the {_MAX_RESULT} a call can hand back; pass big data "
                             "through shared storage"))
    return reply


def _actor_handler(instance):
    def handle(request):
        method, margs, mkwargs = pickle.loads(request)
        return _outcome(lambda: getattr(instance, method)(*margs, **mkwargs))
    return handle


def pool_worker():
    """A warm process of a driver's pool (see atl._workerpool): hosts
    $ATL_POOL_NAME, says so to $ATL_POOL_REGISTRY, then runs
    ("run", function, args, kwargs) calls one after another until it is
    asked to ("become", class, args, kwargs, name) an actor: it then hosts
    that actor and leaves the pool. SIGTERM ends it at once, mid-call too."""
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
        kind, *body = pickle.loads(request)
        if kind == "run":
            fn_desc, args, kwargs = body
            return _outcome(lambda: _serialize.decode_function(fn_desc)(*args, **kwargs))
        if kind == "become":
            cls_desc, args, kwargs, actor_name = body

            def become():
                instance = _serialize.decode_class(cls_desc)(*args, **kwargs)
                hosts["actor"] = atl.host_actor(actor_name, _actor_handler(instance))
                # Not from this handler's own thread: closing waits for its call to end.
                threading.Thread(target=leave_pool, daemon=True).start()
            return _outcome(become)
        return pickle.dumps(("err", "ValueError", f"unknown request {kind!r}"))

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
    try:
        fn_desc, args, kwargs = pickle.loads(base64.b64decode(payload))
        fn = _serialize.decode_function(fn_desc)
        value = fn(*args, **kwargs)
    except BaseException as e:  # the caller raises it as its own type
        _send_result(_error(e))
        return 1
    try:
        _send_result(("ok", value))
    except Exception as e:
        _send_result(_error(e, f"the result cannot be sent back: {e}"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
