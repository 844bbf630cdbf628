"""ObjectRefs: values to come (a call's result) or kept by a process of the
job (atl.put, a big result), passed by reference between processes.

A ref's source is one of
  _Call    a call's future (a warm process's call, an actor method, a call
           that waits for the refs it takes);
  _Task    a task's result, read once from the supervisor and kept;
  _Stored  an object (atl._objects): inline in the ref when small, else
           kept by its owner and fetched from there.
A ref that leaves its process pickled (an argument, a result, a value of a
put) goes as its object: a value to come is waited for first (a call that
takes pending refs is sent once they are ready, see `pending`), a value
that came back here is stored here. Top-level ref arguments reach the
function as their values (Ray's rule); refs nested in them stay refs the
function can atl.get."""
from __future__ import annotations

import base64
import hashlib
import os
import pickle
import threading
import types

from . import _errors, _objects
from ._capi import GetTimeoutError

# Ray's classes are generic for type hints (`ref: ObjectRef[int] = f.remote()`,
# evaluated at run time in a module): subscripted, atl's stay the class
# itself for isinstance.
_generic = classmethod(types.GenericAlias)


class ObjectRef:
    """The future value of a remote call (atl.get() it) or an object put."""

    __class_getitem__ = _generic  # ObjectRef[int] in a type hint, as Ray's

    def __init__(self, name, source, part=None):
        self._name = name
        self._source = source
        self._part = part  # (i, n): value i of a call with num_returns=n

    @property
    def task(self):
        """The task that makes it, when it is a task's (atl.cancel kills it)."""
        return getattr(self._source, "task", None)

    @property
    def _future(self):
        return getattr(self._source, "future", None)

    def _parts(self, n):
        """The refs of a num_returns=n call: one per value of its result."""
        return [type(self)(f"{self._name}[{i}]", self._source, (i, n)) for i in range(n)]

    def _pick(self, value):
        if self._part is None:
            return value
        if self._part[0] == "yield":
            return Yielded.item(value, self._part[1], self._name)
        if self._part[0] == "dynamic":
            if not isinstance(value, Yielded):
                raise TypeError(f"{self._name}: num_returns=\"dynamic\" on a function that "
                                f"returned a {type(value).__name__}, not a generator")
            return DynamicObjectRefGenerator(
                [ObjectRef(f"{self._name}[{i}]", self._source, ("yield", i))
                 for i in range(value.count())])
        i, n = self._part
        if isinstance(value, Yielded):
            # A generator with num_returns=n: its items, and its error in
            # each ref past them (Ray's rule).
            if i < len(value.items):
                return value.items[i]
            if value.error:
                return outcome_value(value.error, self._name)
            raise ValueError(f"{self._name}: the generator yielded {len(value.items)} values, "
                             f"not the {n} num_returns={n} asks for")
        if not isinstance(value, (tuple, list)) or len(value) != n:
            got = len(value) if isinstance(value, (tuple, list)) else f"a {type(value).__name__}"
            raise ValueError(f"{self._name}: the task returned {got}, not the {n} values "
                             f"num_returns={n} asks for")
        return value[i]

    def _done(self):
        return self._source.done()

    def _get(self, timeout):
        """Its value; GetTimeoutError when not there after `timeout` s (None: no limit);
        TaskCancelledError for a call atl.cancel stopped (an actor's plain
        method that ran on to its end too, as Ray's)."""
        try:
            value = self._pick(self._source.value(self._name, timeout))
        except GetTimeoutError:
            raise
        except BaseException as e:
            if getattr(self._source, "user_cancelled", False) and isinstance(e, Exception):
                raise _errors.TaskCancelledError(f"{self._name}: cancelled (atl.cancel): {e}") \
                    from None
            raise
        if getattr(self._source, "user_cancelled", False):
            raise _errors.TaskCancelledError(f"{self._name}: cancelled (atl.cancel)")
        return value

    def future(self):
        """A concurrent.futures.Future of its value (Ray's ObjectRef.future()):
        its result is what atl.get returns, its exception what atl.get raises."""
        out = new_future()

        def settle():
            try:
                out.set_result(self._get(None))
            except BaseException as e:
                out.set_exception(e)
        # Set once the value is there; read then on a thread of its own, never
        # on the thread that said it is there (it may fetch a big value).
        self._source.watch().add_done_callback(
            lambda _: threading.Thread(target=settle, daemon=True, name="atl-ref-future").start())
        return out

    def __await__(self):
        """`await ref` in a coroutine (a driver's asyncio code, an async
        actor's method), as Ray's: its value, or what atl.get raises."""
        import asyncio
        return asyncio.wrap_future(self.future()).__await__()

    def hex(self) -> str:
        """The object's id as Ray prints one (56 hex digits): the same for
        every ref to it in this process, and for a stored object's refs in
        every process (its id in the object plane)."""
        source = self._source
        base = getattr(source, "_atl_hex", None)
        if base is None:
            oid = getattr(source, "oid", None)
            base = oid.hex() if isinstance(oid, (bytes, bytearray)) else os.urandom(28).hex()
            source._atl_hex = base  # (a race makes two: the one kept is every later call's)
        part = "" if self._part is None else repr(self._part)
        return hashlib.sha224(f"{base}/{part}".encode()).hexdigest()

    def binary(self) -> bytes:
        """hex() as bytes (Ray's ObjectRef.binary())."""
        return bytes.fromhex(self.hex())

    def is_nil(self) -> bool:
        return False

    def __reduce__(self):
        owner, oid, inline = self._source.wire(self._part, self._pick, self._name)
        return (_borrowed, (owner, oid, inline, self._name))

    def __repr__(self):
        return f"ObjectRef({self._source.describe()}, {self._name})"


class ActorRef(ObjectRef):
    """A pending actor method call (atl.get it, or pass it on)."""


def _borrowed(owner, oid, inline, name):
    """A ref unpickled in another process than the one that sent it."""
    return ObjectRef(name, _Stored(owner, oid, inline))


# --- sources ----------------------------------------------------------------------


class _Source:
    """What every source shares: a value that, once there, can be sent on."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stored = {}  # part -> the _Stored this process keeps for borrowers

    def watch(self):
        """A future done when the value is there (atl.wait blocks on it)."""
        return self.future

    def wire(self, part, pick, name):
        """(owner, oid, inline) of the value (the `part` of it), stored here
        once when it must travel; pinned once more for the borrower."""
        with self._lock:
            stored = self._stored.get(part)
        if stored is None:
            stored = _Stored.of(pick(self.value(name, None)))
            with self._lock:
                stored = self._stored.setdefault(part, stored)
        return stored.wire(part, pick, name)


def new_future():
    from concurrent.futures import Future
    return Future()


class _Call(_Source):
    """A future's value. A call run from a thread of its own (atl's
    _in_background) also has `inner` (the ref of its try now), `cancelled`
    and `why` (what it waits for, said by a get that times out)."""

    def __init__(self, future):
        super().__init__()
        self.future = future
        self.inner = None
        self.why = None

    def done(self):
        return self.future.done()

    def value(self, name, timeout):
        from concurrent.futures import TimeoutError as FutureTimeout
        try:
            return self.future.result(timeout)
        except FutureTimeout:
            why = f": {self.why}" if self.why else ""
            raise GetTimeoutError(5, f"{name} is not done after {timeout} s{why}") from None

    def describe(self):
        return "call"


# A get(timeout=None) asks in pieces this long, so Ctrl-C ends it within one.
_GET_PIECE_MS = 1000


class _Task(_Source):
    """A task's result: ("ok", inline) / ("pushed", oid) / ("err", ...) on the
    control channel, read once; `keep`: the call's stored arguments, released then."""

    def __init__(self, task, keep=None, result_oid=None):
        super().__init__()
        self.task = task
        self._keep = keep
        if result_oid is not None:  # a big result pushed here and never read: dropped with it
            _objects.on_collect(self, _objects.store().take, result_oid)
        self._outcome = None  # ("value", v) | ("error", e)
        self._read = threading.Lock()

    def done(self):
        return self._outcome is not None or self.task.done()

    def watch(self):
        """A future set once the task ended (a thread of its own waits for it)."""
        with self._lock:
            if getattr(self, "_watched", None) is None:
                self._watched = new_future()

                def read():
                    try:
                        self.task.wait(timeout=None)  # in pieces, each answered when it ends
                    except BaseException:
                        pass  # lost, or never ran: get says so
                    self._watched.set_result(None)
                threading.Thread(target=read, daemon=True, name="atl-watch").start()
            return self._watched

    def value(self, name, timeout):
        with self._read:
            if self._outcome is None:
                self._outcome = self._fetch(name, timeout)
                if self._keep is not None:
                    self._keep.release()
                    self._keep = None
        kind, v = self._outcome
        if kind == "error":
            raise v
        return v

    def _fetch(self, name, timeout):
        from . import _c
        task = self.task
        if timeout is None:  # no deadline: in pieces, so Ctrl-C ends the wait within one
            while True:
                try:
                    text = _c().task_result(task.id, _GET_PIECE_MS)
                    break
                except GetTimeoutError:
                    continue
        else:
            text = _c().task_result(task.id, max(0, int(timeout * 1000)))
        if text is None:
            code = task.wait(0)
            tail = task.output()[-2000:]
            return ("error", _errors.WorkerCrashedError(
                f"{name} (task {task.id}) ended with {code} and no result; "
                f"its output ends: {tail!r}"))
        try:
            return ("value", outcome_value(pickle.loads(base64.b64decode(text)),
                                           f"{name} (task {task.id})"))
        except Exception as e:
            return ("error", e)

    def describe(self):
        return f"task={self.task.id}"


class _Stored(_Source):
    """An object: `inline` (its pickle) when small, else (owner, oid). The
    owner's copy is held while this lives: as one count of the owner's own
    (owned), or as the pin a borrower was sent with (borrowed)."""

    def __init__(self, owner, oid, inline):
        super().__init__()
        self.owner, self.oid, self.inline = owner, oid, inline
        if oid is not None:
            _objects.on_collect(self, _objects.release_later, owner, oid)

    @classmethod
    def of(cls, value):
        """`value` put in this process's store (or inline, when small)."""
        frames = _objects.dumps(value)
        if _objects.size(frames) <= _objects.INLINE_MAX:
            return cls(None, None, _objects.inline(frames))
        # Copied once: the store's copy does not change when the caller's does.
        frames = [_objects.copy(f) for f in frames]
        oid = _objects.new_oid()
        _objects.store().put(oid, frames, count=1)
        return cls(_objects.address(), oid, None)

    def done(self):
        return True

    def watch(self):
        f = new_future()
        f.set_result(None)
        return f

    def value(self, name, timeout):
        if self.inline is not None:
            return _objects.loads(self.inline)
        try:
            return _objects.loads(_objects.fetch(self.owner, self.oid))
        except _objects.ObjectLostError as e:
            raise _errors.OwnerDiedError(f"{name}: {e}") from None

    def wire(self, part, pick, name):
        if self.inline is not None:
            return None, None, self.inline
        if _objects.is_local(self.owner):
            _objects.store().hold(self.oid)
            return self.owner, self.oid, None
        try:
            _objects.hold(self.owner, self.oid)  # a borrower sending it on pins it at the owner
        except _objects.ObjectLostError as e:
            raise _errors.OwnerDiedError(f"{name}: cannot be sent on: {e}") from None
        return self.owner, self.oid, None

    def describe(self):
        return "inline" if self.inline is not None else f"{self.oid.hex()[:12]}@{self.owner}"


def put(value: object) -> ObjectRef:
    """`value` as an object of this process: a ref any process of the job can
    atl.get, or pass on. Freed when every ref to it is gone."""
    if isinstance(value, ObjectRef):
        raise TypeError("atl.put: the value is already an ObjectRef")
    return ObjectRef("put", _Stored.of(value))


# --- calls: what travels, what comes back ---------------------------------------------

def pending(value, _depth=0):
    """The refs in `value` (in its lists, tuples, sets and dicts) whose values
    are not there yet. A ref inside another object is not looked for: sending
    it waits for its value (see _Source.wire)."""
    if isinstance(value, ObjectRef):
        return [] if value._done() else [value]
    if _depth > 8:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        found = []
        for v in value:
            if isinstance(v, (ObjectRef, list, tuple, dict, set, frozenset)):
                found += pending(v, _depth + 1)
        return found
    return []


class Body:
    """A call as it travels: inline when small, else an object of the caller's
    (held until the call ends: `release`)."""

    def __init__(self, call, label):
        try:
            frames = _objects.dumps(call)
        except Exception as e:
            raise TypeError(f"{label}: cannot send the call to a worker: {e}") from None
        self.oid = None
        if _objects.size(frames) <= _objects.INLINE_MAX:
            self.wire = ("inline", _objects.inline(frames))
        else:
            self.oid = _objects.new_oid()
            _objects.store().put(self.oid, frames, count=1)
            self.wire = ("stored", _objects.address(), self.oid)

    def release(self):
        if self.oid is not None:
            _objects.store().release(self.oid)
            self.oid = None


def unpack(wire):
    """The call a Body carried."""
    if wire[0] == "inline":
        return _objects.loads(wire[1])
    _, owner, oid = wire
    return _objects.loads(_objects.fetch(owner, oid))


def resolve(args, kwargs):
    """Top-level ref arguments as their values (Ray's rule)."""
    args = tuple(a._get(None) if isinstance(a, ObjectRef) else a for a in args)
    kwargs = {k: (v._get(None) if isinstance(v, ObjectRef) else v) for k, v in kwargs.items()}
    return args, kwargs


def result_slot(stream=False, backpressure=None):
    """Where a big result is pushed: this process's object server and a new
    oid; `stream`: a streaming generator's call, whose items are pushed
    there one by one as they are yielded (item_oid(oid, i)); with
    `backpressure` (n), the generator pauses while n of them wait for this
    process's `next` (see _objects.Streams)."""
    if stream:
        oid = _objects.new_oid()
        if backpressure:
            _objects.streams().open(oid)
            return (_objects.address(), oid, True, backpressure)
        return (_objects.address(), oid, True)
    return (_objects.address(), _objects.new_oid())


def item_oid(base, i):
    """The oid of item `i` of the streaming call whose slot is `base`."""
    import hashlib
    return hashlib.blake2b(base + i.to_bytes(8, "big"), digest_size=16).digest()


def is_streaming(num_returns, generator):
    """Whether a call's refs come as Ray's ObjectRefGenerator: items as yielded."""
    return num_returns == "streaming" or (num_returns is None and generator)


class Yielded:
    """What a generator (a remote function or actor method that yields)
    yielded, gathered where it ran, and the error that ended it (an error
    outcome) if one did: the caller's ObjectRefGenerator hands a ref per item,
    and one more for the error, which its get raises (as Ray's)."""

    def __init__(self, items, error=None, streamed=0):
        self.items = items
        self.error = error
        self.streamed = streamed  # items pushed to the caller as they came (before `items`)

    @classmethod
    def of(cls, generator, result_to=None):
        """The generator run to its end. For a streaming call (`result_to`
        marked so by result_slot) each item goes to the caller as it is
        yielded, so the caller's `next` has it while the generator runs on."""
        if result_to is not None and len(result_to) > 2 and result_to[2]:
            owner, base = result_to[0], result_to[1]
            bound = result_to[3] if len(result_to) > 3 else None
            n = taken = 0
            try:
                for item in generator:
                    _objects.push(owner, item_oid(base, n), _objects.dumps(item))
                    n += 1
                    if bound:  # paused while `bound` items wait for the caller's next
                        taken = _objects.wait_consumed(owner, base, n - bound + 1, taken)
            except BaseException as e:
                return cls([], _errors.error_outcome(e), streamed=n)
            return cls([], streamed=n)
        items = []
        try:
            for item in generator:
                items.append(item)
        except BaseException as e:
            return cls(items, _errors.error_outcome(e))
        return cls(items)

    def count(self):
        return self.streamed + len(self.items) + (1 if self.error else 0)

    def item(self, i, label):
        if not isinstance(self, Yielded):
            raise TypeError(f"{label}: the call returned a {type(self).__name__}, not a "
                            f"generator's items")
        if i < self.streamed:
            raise _errors.RemoteError(f"{label}: item {i} was streamed to the caller")
        i -= self.streamed
        if i < len(self.items):
            return self.items[i]
        return outcome_value(self.error, label)


class ObjectRefGenerator:
    """A generator call's refs, one per item it yielded, in order (Ray's
    ObjectRefGenerator: `for ref in gen.remote(): atl.get(ref)`). Each item
    comes as it is yielded where the generator runs (pushed here: `next`
    waits for the next one, not for the generator's end); an error it
    raised is the last ref's, raised by its get."""

    __class_getitem__ = _generic  # subscripted in a type hint, as Ray's

    def __init__(self, ref, slot=None):
        self._ref = ref
        self._next = 0
        self._slot = slot  # the call's result slot oid: items at item_oid(slot, i)
        self._woken = False
        if slot is not None:
            # Items pushed here and never handed out are dropped with this
            # generator, once the call has ended (none comes after).
            read = self._read = [0]
            source = ref._source
            _objects.on_collect(self, _drop_unread, source, ref._name, slot, read)

    def __iter__(self):
        return self

    def __next__(self):
        ref = self.next_ref(None)
        if ref is None:
            raise StopIteration
        return ref

    def __aiter__(self):
        return self

    async def __anext__(self):
        import asyncio
        ref = await asyncio.get_running_loop().run_in_executor(None, self.next_ref, None)
        if ref is None:
            raise StopAsyncIteration
        return ref

    def watch(self):
        """A future done once the next item is here or the call has ended:
        what atl.wait waits for on a generator, as Ray's ray.wait([gen])."""
        ended = self._ref._source.watch()
        if self._slot is None:
            return ended
        oid, store = item_oid(self._slot, self._next), _objects.store()
        if not self._woken:  # (once: the call's end wakes every wait after it)
            self._woken = True
            ended.add_done_callback(lambda _: store.wake())
        future = new_future()

        def wait():
            while not store.wait_for(oid, ended.done, 1.0) and not ended.done():
                pass
            future.set_result(None)
        threading.Thread(target=wait, daemon=True, name="atl-generator-wait").start()
        return future

    def next_ref(self, timeout):
        """The next item's ref, None once there is no more; GetTimeoutError
        when none came within `timeout` s (None: no limit)."""
        i = self._next
        name = f"{self._ref._name}[{i}]"
        if self._slot is not None:
            oid = item_oid(self._slot, i)
            store = _objects.store()
            ended = self._ref._source.watch()
            if not store.wait_for(oid, ended.done, 0):
                if not self._woken:  # (once: the call's end wakes every wait after it)
                    self._woken = True
                    ended.add_done_callback(lambda _: store.wake())
                import time
                deadline = None if timeout is None else time.monotonic() + timeout
                while not store.wait_for(oid, ended.done, 1.0):
                    if ended.done():
                        break
                    if deadline is not None and time.monotonic() >= deadline:
                        raise GetTimeoutError(5, f"{name} did not come within {timeout} s")
            if store.get(oid) is not None:
                self._next += 1
                self._read[0] = self._next
                _objects.streams().consumed(self._slot, self._next)
                return ObjectRef(name, _Stored(_objects.address(), oid, None))
        try:
            count = self._ref._source.value(self._ref._name, timeout).count()
        except GetTimeoutError:
            raise
        except Exception:
            count = 1  # the call itself failed: one ref, whose get raises why
        if i >= count:
            return None
        self._next += 1
        if self._slot is not None:
            self._read[0] = self._next
        return ObjectRef(name, self._ref._source, ("yield", i))

    def _next_sync(self, timeout_s=None):
        """The next ref within `timeout_s`, None once the stream ended (Ray's
        returns a ref that says so instead)."""
        return self.next_ref(timeout_s)

    def completed(self):
        """A ref done when the generator has ended."""
        return self._ref

    def is_finished(self):
        return self._ref._done()

    def __repr__(self):
        return f"ObjectRefGenerator({self._ref!r})"


def _drop_unread(source, name, slot, read):
    """A streaming generator collected: the items pushed here that it never
    handed out go, once its call has ended."""
    _objects.streams().close(slot)  # a generator paused for its next goes on to its end

    def drop(_):
        try:
            count = source.value(name, 0).count()
        except BaseException:
            return
        store = _objects.store()
        for i in range(read[0], count):
            store.release(item_oid(slot, i))
    source.watch().add_done_callback(drop)


class DynamicObjectRefGenerator:
    """The value of a num_returns="dynamic" call's ref: its items' refs."""

    __class_getitem__ = _generic  # subscripted in a type hint, as Ray's

    def __init__(self, refs):
        self._refs = refs

    def __iter__(self):
        return iter(self._refs)

    def __len__(self):
        return len(self._refs)


def shaped(ref, num_returns, generator, slot=None):
    """A call's ref as its caller gets it: num_returns=n: n refs; a
    generator (or "streaming"): an ObjectRefGenerator (its items pushed to
    `slot`, the call's result slot, as they come); "dynamic": a ref whose
    value is a DynamicObjectRefGenerator."""
    if num_returns == "dynamic":
        return type(ref)(ref._name, ref._source, ("dynamic", 0))
    if is_streaming(num_returns, generator):
        return ObjectRefGenerator(ref, slot[1] if slot else None)
    if isinstance(num_returns, int) and num_returns != 1:
        return ref._parts(num_returns)
    return ref


def outcome_of(run, result_to):
    """("ok", inline) | ("pushed", oid) | ("err", ...) for run()'s value or exception."""
    error_outcome = _errors.error_outcome
    try:
        value = run()
        frames = _objects.dumps(value)
    except BaseException as e:
        return error_outcome(e)
    if _objects.size(frames) <= _objects.INLINE_MAX:
        return ("ok", _objects.inline(frames))
    owner, oid = result_to
    try:
        _objects.push(owner, oid, frames)
    except Exception as e:
        return error_outcome(e, f"the result ({_objects.size(frames)} bytes) cannot be sent "
                                f"back to the caller at {owner}: {e}")
    return ("pushed", oid)


def outcome_value(outcome, label):
    """The value an outcome carries, or its error raised."""
    if outcome[0] == "ok":
        return _objects.loads(outcome[1])
    if outcome[0] == "pushed":
        frames = _objects.store().take(outcome[1])
        if frames is None:
            raise _errors.RemoteError(f"{label}: its result was pushed but is not here")
        return _objects.loads(frames)
    raise _errors.task_error(f"{label} raised {outcome[1]}:\n{outcome[2]}", outcome)

