"""Ray's ActorPool (`ray.util.ActorPool`): work spread over a fixed set of
actors, each actor one call at a time, results in submission order (map,
get_next) or as they finish (map_unordered, get_next_unordered)."""
import collections

__all__ = ["ActorPool"]


class ActorPool:
    """`fn(actor, value)` submits one call and returns its ref (say,
    `lambda a, v: a.double.remote(v)`); a value waits while every actor is
    busy, and goes to the first one freed."""

    def __init__(self, actors):
        self._idle = list(actors)
        self._busy = {}  # ref -> (its index, its actor)
        self._by_index = {}  # index -> ref
        self._pending = collections.deque()  # (fn, value) waiting for a free actor
        self._next_task = 0  # the index the next submit gets
        self._next_return = 0  # the index get_next returns next

    def map(self, fn, values):
        """Each value through fn, its results in the order of `values`."""
        while self.has_next():  # what an earlier submit left is dropped, as Ray's
            self.get_next_unordered()
        for v in values:
            self.submit(fn, v)
        while self.has_next():
            yield self.get_next()

    def map_unordered(self, fn, values):
        """Each value through fn, its results as they finish."""
        while self.has_next():
            self.get_next_unordered()
        for v in values:
            self.submit(fn, v)
        while self.has_next():
            yield self.get_next_unordered()

    def submit(self, fn, value):
        """fn(actor, value) on an idle actor, or once one is freed."""
        if self._idle:
            actor = self._idle.pop()
            ref = fn(actor, value)
            self._busy[ref] = (self._next_task, actor)
            self._by_index[self._next_task] = ref
            self._next_task += 1
        else:
            self._pending.append((fn, value))

    def has_next(self):
        """Whether a result is still to be got."""
        return bool(self._busy) or bool(self._pending)

    def get_next(self, timeout=None, ignore_if_timedout=False):
        """The next result in submission order; TimeoutError when it is not
        there after `timeout` s (the result is then skipped if
        ignore_if_timedout, else got by the next call)."""
        import atl
        if not self.has_next():
            raise StopIteration("no more results to get")
        if self._next_return >= self._next_task:
            raise ValueError("it is not allowed to call get_next() after get_next_unordered()")
        ref = self._by_index[self._next_return]
        if timeout is not None:
            ready, _ = atl.wait([ref], timeout=timeout)
            if not ready:
                if ignore_if_timedout:
                    self._return(ref)
                    del self._by_index[self._next_return]
                    self._next_return += 1
                raise TimeoutError("timed out waiting for result")
        del self._by_index[self._next_return]
        self._next_return += 1
        self._return(ref)
        return atl.get(ref)

    def get_next_unordered(self, timeout=None, ignore_if_timedout=False):
        """Any finished result (the first to finish); TimeoutError as get_next."""
        import atl
        if not self.has_next():
            raise StopIteration("no more results to get")
        ready, _ = atl.wait(list(self._busy), num_returns=1, timeout=timeout)
        if not ready:
            raise TimeoutError("timed out waiting for result")
        ref = ready[0]
        index, _ = self._busy[ref]
        self._by_index.pop(index, None)
        self._next_return = max(self._next_return, index + 1)
        self._return(ref)
        return atl.get(ref)

    def _return(self, ref):
        """The actor of `ref` idle again, and the next pending value given to it."""
        _, actor = self._busy.pop(ref)
        self._idle.append(actor)
        if self._pending:
            self.submit(*self._pending.popleft())

    def has_free(self):
        """Whether an actor is idle and nothing waits for one."""
        return bool(self._idle) and not self._pending

    def pop_idle(self):
        """An idle actor taken out of the pool, or None."""
        return self._idle.pop() if self.has_free() else None

    def push(self, actor):
        """An actor added to the pool (idle)."""
        busy = [a for _, a in self._busy.values()]
        if actor in self._idle or actor in busy:
            raise ValueError("the actor is already in the pool")
        self._idle.append(actor)
        if self._pending:
            self.submit(*self._pending.popleft())

