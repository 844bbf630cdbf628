"""What a remote function's task runs on the worker: decodes the call from
$ATL_TASK_PAYLOAD_0.. (base64, in pieces), runs it, and hands back ("ok", value) or ("err", type,
traceback) as the task's result on the control channel ($ATL_CONTROL_FD)."""
import base64
import os
import pickle
import sys
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
    instance = _serialize.decode_class(cls_desc)(*args, **kwargs)

    def handle(request):
        method, margs, mkwargs = pickle.loads(request)
        try:
            return pickle.dumps(("ok", getattr(instance, method)(*margs, **mkwargs)))
        except BaseException as e:
            return pickle.dumps(("err", type(e).__name__, traceback.format_exc()))

    atl.init()
    host = atl.host_actor(name, handle)
    print(f"actor {name} ready", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    host.close()
    atl.shutdown()
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "actor":
        return host_actor()
    payload = take_payload("ATL_TASK_PAYLOAD")
    if payload is None:
        print("atl worker: no ATL_TASK_PAYLOAD_PARTS (started outside atl?)", file=sys.stderr)
        return 2
    try:
        fn_desc, args, kwargs = pickle.loads(base64.b64decode(payload))
        fn = _serialize.decode_function(fn_desc)
        value = fn(*args, **kwargs)
    except BaseException as e:  # the caller gets it as a RemoteError
        _send_result(("err", type(e).__name__, traceback.format_exc()))
        return 1
    try:
        _send_result(("ok", value))
    except Exception as e:
        _send_result(("err", type(e).__name__, f"the result cannot be sent back: {e}"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
