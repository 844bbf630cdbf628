"""ctypes over libatl.so (libs/capi/include/atl.h): every call checked, every
error raised as an AtlError subclass carrying atl's code and one-line message."""
import ctypes
import os
import shutil
import threading

ATL_API_VERSION = 1

# atl_code
OK, FAILED, USAGE, REFUSED, UNREACHABLE, TIMEOUT, INTERNAL = range(7)


class AtlError(Exception):
    """An atl call failed; `code` is atl_code, str(e) the one-line reason."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class UsageError(AtlError, ValueError):
    """Bad arguments: nothing changed."""


class RefusedError(AtlError):
    """Not allowed in the job's current state: nothing changed."""


class UnreachableError(AtlError, ConnectionError):
    """The supervisor could not be reached or did not answer."""


class GetTimeoutError(AtlError, TimeoutError):
    """What was waited for did not happen in time."""


_ERRORS = {USAGE: UsageError, REFUSED: RefusedError, UNREACHABLE: UnreachableError,
           TIMEOUT: GetTimeoutError}


def _candidates():
    env = os.environ.get("ATL_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    # A source checkout: python/atl -> build/lib.
    yield os.path.join(here, "..", "..", "build", "lib", "libatl.so")
    # Beside atl's binaries (bin/ and lib/ of one build or install).
    for tool in ("atlctl", "headnode"):
        found = shutil.which(tool)
        if found:
            yield os.path.join(os.path.dirname(os.path.realpath(found)), "..", "lib", "libatl.so")
    yield "libatl.so.1"  # the loader's own search path


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("atl: cannot load libatl.so; set ATL_LIBRARY to its path (tried: "
                      + "; ".join(tried) + ")")


_lib = _load()
_P = ctypes.c_void_p
_signatures = {
    "atl_api_version": ([], ctypes.c_int),
    "atl_code_name": ([ctypes.c_int], ctypes.c_char_p),
    "atl_status_code": ([_P], ctypes.c_int),
    "atl_status_message": ([_P], ctypes.c_char_p),
    "atl_status_free": ([_P], None),
    "atl_free": ([_P], None),
    "atl_connect": ([ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_P)], _P),
    "atl_disconnect": ([_P], None),
    "atl_interrupt": ([_P], None),
    "atl_job_info": ([_P, ctypes.POINTER(_P)], _P),
    "atl_cluster_state": ([_P, ctypes.POINTER(_P)], _P),
    "atl_pg_create": ([_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64,
                       ctypes.POINTER(ctypes.c_int64)], _P),
    "atl_pg_create_json": ([_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                            ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_P)], _P),
    "atl_pg_wait": ([_P, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(_P)], _P),
    "atl_pg_remove": ([_P, ctypes.c_int64], _P),
    "atl_disown": ([_P, ctypes.c_int, ctypes.c_int64], _P),
    "atl_task_start": ([_P, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p,
                        ctypes.POINTER(ctypes.c_int32)], _P),
    "atl_task_start_detached": ([_P, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p,
                                 ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int32)],
                                _P),
    "atl_task_wait": ([_P, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_int32),
                       ctypes.POINTER(ctypes.c_int32)], _P),
    "atl_task_output": ([_P, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(_P),
                         ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)], _P),
    "atl_task_result": ([_P, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(_P)], _P),
    "atl_task_kill": ([_P, ctypes.c_int32], _P),
    "atl_reply_set": ([_P, ctypes.c_char_p, ctypes.c_int64], None),
    "atl_reply_error": ([_P, ctypes.c_char_p], None),
    "atl_actor_host": ([_P, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.POINTER(_P)], _P),
    "atl_actor_close": ([_P], None),
    "atl_actor_call": ([_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                        ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_int64)], _P),
    "atl_actor_list": ([_P, ctypes.POINTER(_P)], _P),
}

# void (*)(void* user_data, const char* request, int64_t size, atl_reply* reply)
ACTOR_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char), ctypes.c_int64,
                            ctypes.c_void_p)
for _name, (_args, _res) in _signatures.items():
    _f = getattr(_lib, _name)
    _f.argtypes = _args
    _f.restype = _res

if _lib.atl_api_version() != ATL_API_VERSION:
    raise ImportError(f"atl: libatl.so speaks API {_lib.atl_api_version()}, this package "
                      f"{ATL_API_VERSION}")

# The codes above are the supervisor's ReplyCode (atl_code): checked, not assumed.
_CODE_NAMES = {OK: "ok", FAILED: "failed", USAGE: "usage", REFUSED: "refused",
               UNREACHABLE: "unreachable", TIMEOUT: "timeout", INTERNAL: "internal"}
for _code, _expected in _CODE_NAMES.items():
    if _lib.atl_code_name(_code).decode() != _expected:
        raise ImportError(f"atl: libatl.so's code {_code} is "
                          f"{_lib.atl_code_name(_code).decode()!r}, this package's {_expected!r}")


def check(status):
    """Raises the error a non-NULL atl_status* carries (and frees it)."""
    if not status:
        return
    code = _lib.atl_status_code(status)
    message = (_lib.atl_status_message(status) or b"").decode("utf-8", "replace")
    _lib.atl_status_free(status)
    raise _ERRORS.get(code, AtlError)(code, message)


def take_string(ptr):
    """The text at a char* the library allocated (then freed), or None."""
    if not ptr.value:
        return None
    try:
        return ctypes.string_at(ptr.value).decode("utf-8", "replace")
    finally:
        _lib.atl_free(ptr.value)


class Client:
    """One connection to the job's supervisor (thread-safe, as libatl's is).

    Every call holds the client open from taking the handle to leaving C;
    close() interrupts the calls in C (they fail at once), waits for every
    call to leave, and only then frees the handle: a thread that had taken it
    must never enter libatl after atl_disconnect (a use after free that
    crashed a driver whose pool thread was in task_wait)."""

    def __init__(self, address=None, tls_dir=None, insecure=False):
        handle = _P()
        check(_lib.atl_connect(address.encode() if address else None,
                               tls_dir.encode() if tls_dir else None, 1 if insecure else 0,
                               ctypes.byref(handle)))
        self._handle = handle
        self._cond = threading.Condition()
        self._inside = 0  # calls between taking the handle and leaving C
        self._freed = threading.Event()

    def close(self):
        with self._cond:
            handle, self._handle = self._handle, None  # new calls from here on are refused
        if not handle:
            self._freed.wait()  # a close on another thread finishes first
            return
        _lib.atl_interrupt(handle)  # calls in C return at once ("disconnected")
        with self._cond:
            self._cond.wait_for(lambda: self._inside == 0)
        _lib.atl_disconnect(handle)
        self._freed.set()

    def _enter(self):
        with self._cond:
            if not self._handle:
                raise UsageError(USAGE, "atl is not connected (atl.init() first)")
            self._inside += 1
            return self._handle

    def _leave(self):
        with self._cond:
            self._inside -= 1
            if self._inside == 0:
                self._cond.notify_all()

    def _call(self, fn, *args):
        """fn(handle, *args), checked, with the client held open meanwhile."""
        handle = self._enter()
        try:
            check(fn(handle, *args))
        finally:
            self._leave()

    def _json_call(self, fn, *args):
        out = _P()
        self._call(fn, *args, ctypes.byref(out))
        return take_string(out)

    def job_info(self):
        return self._json_call(_lib.atl_job_info)

    def cluster_state(self):
        return self._json_call(_lib.atl_cluster_state)

    def pg_create(self, name, strategy, bundles_json, timeout_ms):
        """(id, the group's JSON as it is now)."""
        gid, out = ctypes.c_int64(-1), _P()
        self._call(_lib.atl_pg_create_json, (name or "").encode(), strategy.encode(),
                   bundles_json.encode(), int(timeout_ms), ctypes.byref(gid), ctypes.byref(out))
        return gid.value, take_string(out)

    def pg_wait(self, gid, timeout_ms):
        return self._json_call(_lib.atl_pg_wait, ctypes.c_int64(gid), ctypes.c_int64(timeout_ms))

    def pg_remove(self, gid):
        self._call(_lib.atl_pg_remove, gid)

    def disown(self, group, ident):
        """A group (group=True) or task this client made outlives it (detached)."""
        self._call(_lib.atl_disown, 1 if group else 0, ident)

    def task_start(self, command, group=0, bundle=-1, pod=None, env=None, working_dir=None,
                   detached=False, restarts=0, own_group=False):
        """A task's id. detached: it outlives this client from the start;
        restarts (a detached task's): the supervisor starts it again when it
        ends other than by task_kill, that many times (-1: without end);
        own_group: `group` is its own, removed once it ended for good."""
        env_list = [f"{k}={v}".encode() for k, v in (env or {}).items()]
        env_array = (ctypes.c_char_p * (len(env_list) + 1))(*env_list, None)
        tid = ctypes.c_int32(-1)
        where = (int(group), int(bundle), pod.encode() if pod else None, command.encode(),
                 env_array, working_dir.encode() if working_dir else None)
        if detached:
            self._call(_lib.atl_task_start_detached, *where, int(restarts),
                       1 if own_group else 0, ctypes.byref(tid))
        else:
            self._call(_lib.atl_task_start, *where, ctypes.byref(tid))
        return tid.value

    def task_wait(self, tid, timeout_ms):
        code, sig = ctypes.c_int32(0), ctypes.c_int32(0)
        self._call(_lib.atl_task_wait, tid, int(timeout_ms), ctypes.byref(code),
                   ctypes.byref(sig))
        return code.value, sig.value

    def task_output(self, tid, offset):
        data, size, nxt = _P(), ctypes.c_int64(0), ctypes.c_int64(offset)
        self._call(_lib.atl_task_output, tid, int(offset), ctypes.byref(data),
                   ctypes.byref(size), ctypes.byref(nxt))
        try:
            raw = ctypes.string_at(data.value, size.value) if data.value else b""
        finally:
            if data.value:
                _lib.atl_free(data.value)
        return raw, nxt.value

    def task_result(self, tid, timeout_ms):
        out = _P()
        self._call(_lib.atl_task_result, tid, int(timeout_ms), ctypes.byref(out))
        return take_string(out)

    def task_kill(self, tid):
        self._call(_lib.atl_task_kill, tid)

    def actor_host(self, name, handler):
        """Hosts `handler` (bytes -> bytes) as actor `name`; returns a closer.
        The handler runs on a thread of libatl, one call at a time; what it
        raises reaches the caller as the call's error."""
        def trampoline(_user, data, size, reply):
            try:
                out = handler(ctypes.string_at(data, size) if size else b"")
                out = b"" if out is None else bytes(out)
                _lib.atl_reply_set(reply, out, len(out))
            except BaseException as e:  # never into C
                _lib.atl_reply_error(reply, f"{type(e).__name__}: {e}".encode("utf-8",
                                                                                 "replace"))
        callback = ACTOR_FN(trampoline)
        handle = _P()
        self._call(_lib.atl_actor_host, name.encode(), ctypes.cast(callback, ctypes.c_void_p),
                   None, ctypes.byref(handle))
        return handle, callback  # the callback must live as long as the actor

    def actor_close(self, handle):
        """Unregisters and stops it; after close() (its client's), only frees it."""
        try:
            self._enter()
        except UsageError:
            self._freed.wait()  # atl_disconnect stopped it (or is stopping it) first
            _lib.atl_actor_close(handle)
            return
        try:
            _lib.atl_actor_close(handle)
        finally:
            self._leave()

    def actor_call(self, name, data, timeout_ms):
        out, size = _P(), ctypes.c_int64(0)
        self._call(_lib.atl_actor_call, name.encode(), data, len(data), int(timeout_ms),
                   ctypes.byref(out), ctypes.byref(size))
        try:
            return ctypes.string_at(out.value, size.value) if out.value else b""
        finally:
            if out.value:
                _lib.atl_free(out.value)

    def actor_list(self):
        return self._json_call(_lib.atl_actor_list)
