"""Ray's distributed `multiprocessing.Pool` (`ray.util.multiprocessing`):
Python's Pool API over a set of actors spread on the job's workers, so a
program written for `multiprocessing.Pool` scales out by changing its import.

Each of the pool's processes is an actor that runs the initializer once and
then batches of calls (a map's chunks), one batch at a time; batches go to
the actors in turn. map/starmap give their results in order, imap in order
as they come, imap_unordered as they finish; a call that raised raises its
exception (the first in order) where the result is got, as Python's Pool
does. maxtasksperchild ends an actor after that many batches and starts a
new one in its place (its initializer run again)."""
from __future__ import annotations

import itertools
import threading
from multiprocessing import TimeoutError

import atl

__all__ = ["Pool", "TimeoutError"]


@atl.remote
class _PoolProcess:
    def __init__(self, initializer, initargs):
        if initializer is not None:
            initializer(*(initargs or ()))

    def ping(self):
        return True

    def run_batch(self, func, batch, star):
        # Each call's outcome on its own: one call's exception does not lose
        # the others' results (imap gives those before it).
        out = []
        for args in batch:
            try:
                out.append((True, func(*args) if star else func(args)))
            except Exception as e:
                out.append((False, e))
        return out


def _values(outcomes):
    """The values of a batch's outcomes; its first exception raised."""
    values = []
    for ok, value in outcomes:
        if not ok:
            raise value
        values.append(value)
    return values


class AsyncResult:
    """What apply_async/map_async/starmap_async return, as Python's."""

    def __init__(self, refs, single, callback=None, error_callback=None):
        self._refs = refs
        self._single = single
        self._done = threading.Event()
        self._value = None
        self._error = None
        threading.Thread(target=self._collect, args=(callback, error_callback), daemon=True,
                         name="atl-pool-result").start()

    def _collect(self, callback, error_callback):
        try:
            values = []
            for outcomes in atl.get(self._refs):
                values.extend(_values(outcomes))
            self._value = values[0] if self._single else values
        except BaseException as e:
            self._error = e
        try:  # before it is ready, as Python's Pool calls them
            if self._error is None and callback is not None:
                callback(self._value)
            elif self._error is not None and error_callback is not None:
                error_callback(self._error)
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> None:
        """Returns once the result is there or `timeout` s passed."""
        self._done.wait(timeout)

    def get(self, timeout: float | None = None):
        """The result; multiprocessing.TimeoutError if not there after `timeout` s."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"the pool's result is not there after {timeout} s")
        if self._error is not None:
            raise self._error
        return self._value

    def ready(self) -> bool:
        return self._done.is_set()

    def successful(self) -> bool:
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        return self._error is None


class _IMap:
    """imap's and imap_unordered's iterator: chunks submitted as results are
    taken, at most two per process ahead."""

    def __init__(self, pool, func, iterable, chunksize, ordered):
        self._pool, self._func, self._ordered = pool, func, ordered
        self._chunks = iter(lambda it=iter(iterable): list(itertools.islice(it, chunksize)), [])
        self._running = []  # refs of submitted chunks, in submission order
        self._ready = []  # values ready to be given
        self._ahead = 2 * len(pool._actors)
        self._fill()

    def _fill(self):
        while len(self._running) < self._ahead:
            chunk = next(self._chunks, None)
            if chunk is None:
                return
            self._running.append(self._pool._submit(self._func, chunk, False))

    def __iter__(self):
        return self

    def next(self, timeout: float | None = None):
        while not self._ready:
            if not self._running:
                raise StopIteration
            if self._ordered:
                ref = self._running[0]
            else:
                done, _ = atl.wait(self._running, num_returns=1, timeout=timeout)
                if not done:
                    raise TimeoutError(f"no result after {timeout} s")
                ref = done[0]
            try:
                outcomes = atl.get(ref, timeout=timeout)
            except atl.GetTimeoutError:
                raise TimeoutError(f"no result after {timeout} s") from None
            self._running.remove(ref)
            self._fill()
            self._ready.extend(outcomes)
        ok, value = self._ready.pop(0)
        if not ok:
            raise value
        return value

    __next__ = next


class Pool:
    """A pool of `processes` actors (default: the job's CPUs), as Python's
    multiprocessing.Pool. `ray_remote_args` are the actors' options (say
    {"num_cpus": 1}); `context` is taken and unused, as Ray's."""

    def __init__(self, processes: int | None = None, initializer=None, initargs=None,
                 maxtasksperchild: int | None = None, context=None,
                 ray_address: str | None = None, ray_remote_args: dict | None = None):
        if not atl.is_initialized():
            atl.init(ray_address)  # (None: the job's, from $ATL_ADDRESS)
        cpus = int(atl.cluster_resources().get("CPU", 0))
        if processes is None:
            processes = max(1, cpus)
        if isinstance(processes, bool) or not isinstance(processes, int) or processes <= 0:
            raise ValueError(f"Pool: processes={processes!r}: the pool needs at least one "
                             f"process")
        if processes > cpus:
            raise ValueError(f"Pool: processes={processes}, but the job's workers have "
                             f"{cpus} CPUs: ask for at most {cpus}")
        if maxtasksperchild is not None and (isinstance(maxtasksperchild, bool) or
                                             not isinstance(maxtasksperchild, int) or
                                             maxtasksperchild < 1):
            raise ValueError(f"Pool: maxtasksperchild={maxtasksperchild!r}: a whole number "
                             f">= 1, or None")
        self._initializer, self._initargs = initializer, initargs
        self._max_batches = maxtasksperchild
        self._maker = _PoolProcess.options(**(ray_remote_args or {}))
        self._lock = threading.Lock()
        self._closed = False
        self._next = 0
        self._ending = []  # refs of __ray_terminate__ calls of replaced processes
        self._actors = [[self._start(), 0] for _ in range(processes)]
        atl.get([a.ping.remote() for a, _ in self._actors])

    def _start(self):
        return self._maker.remote(self._initializer, self._initargs)

    def _check_running(self):
        if self._closed:
            raise ValueError("Pool not running")

    def _submit(self, func, batch, star):
        """A batch's ref (its outcomes), on the next process in turn."""
        with self._lock:
            self._check_running()
            entry = self._actors[self._next]
            self._next = (self._next + 1) % len(self._actors)
            ref = entry[0].run_batch.remote(func, batch, star)
            entry[1] += 1
            if self._max_batches is not None and entry[1] >= self._max_batches:
                # Ends after the batches it has; a new one takes its turns.
                self._ending.append(entry[0].__ray_terminate__.remote())
                entry[0], entry[1] = self._start(), 0
            return ref

    def _chunks(self, func, iterable, chunksize, star):
        items = list(iterable)
        if chunksize is None:
            chunksize, extra = divmod(len(items), len(self._actors) * 4)
            chunksize += 1 if extra else 0
        chunksize = max(1, chunksize)
        return [self._submit(func, items[i:i + chunksize], star)
                for i in range(0, len(items), chunksize)]

    def apply(self, func, args=(), kwds=None):
        return self.apply_async(func, args, kwds).get()

    def apply_async(self, func, args=(), kwds=None, callback=None, error_callback=None):
        kwds = dict(kwds or {})
        call = (lambda *a: func(*a, **kwds)) if kwds else func
        return AsyncResult([self._submit(call, [tuple(args)], True)], True, callback,
                           error_callback)

    def map(self, func, iterable, chunksize: int | None = None):
        return self.map_async(func, iterable, chunksize).get()

    def map_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        return AsyncResult(self._chunks(func, iterable, chunksize, False), False, callback,
                           error_callback)

    def starmap(self, func, iterable, chunksize: int | None = None):
        return self.starmap_async(func, iterable, chunksize).get()

    def starmap_async(self, func, iterable, chunksize=None, callback=None,
                      error_callback=None):
        return AsyncResult(self._chunks(func, [tuple(a) for a in iterable], chunksize, True),
                           False, callback, error_callback)

    def imap(self, func, iterable, chunksize: int = 1):
        self._check_running()
        return _IMap(self, func, iterable, max(1, chunksize), ordered=True)

    def imap_unordered(self, func, iterable, chunksize: int = 1):
        self._check_running()
        return _IMap(self, func, iterable, max(1, chunksize), ordered=False)

    def close(self):
        """No more work: the processes end after what they have (join waits)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._ending.extend(a.__ray_terminate__.remote() for a, _ in self._actors)

    def terminate(self):
        """Ends the processes now, work under way or not."""
        with self._lock:
            self._closed = True
            actors, self._actors = self._actors, []
        for actor, _ in actors:
            atl.kill(actor)

    def join(self):
        """Waits for the processes to end (after close() or terminate())."""
        if not self._closed:
            raise ValueError("Pool is still running: close() or terminate() it first")
        if self._ending:
            atl.wait(self._ending, num_returns=len(self._ending))

    def __enter__(self):
        self._check_running()
        return self

    def __exit__(self, *exc):
        self.terminate()
