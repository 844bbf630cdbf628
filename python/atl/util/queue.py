"""Ray's `ray.util.queue`: a first-in first-out queue any process of the job
can put to and get from, held by an async actor (its gets wait at an await,
so puts from others go on meanwhile). Empty and Full are the standard
library's queue.Empty and queue.Full, as Ray's subclass them."""
import asyncio
import queue as _queue

__all__ = ["Queue", "Empty", "Full"]


class Empty(_queue.Empty):
    pass


class Full(_queue.Full):
    pass


class _QueueActor:
    def __init__(self, maxsize):
        self.maxsize = maxsize
        self._made = None

    @property
    def queue(self):
        # Made on the actor's event loop, at its first call (Python 3.9's
        # asyncio.Queue binds the loop it is made on).
        if self._made is None:
            self._made = asyncio.Queue(self.maxsize)
        return self._made

    async def qsize(self):
        return self.queue.qsize()

    async def empty(self):
        return self.queue.empty()

    async def full(self):
        return self.queue.full()

    async def put(self, item, timeout=None):
        try:
            await asyncio.wait_for(self.queue.put(item), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def get(self, timeout=None):
        try:
            return True, await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            return False, None

    async def put_nowait(self, item):
        try:
            self.queue.put_nowait(item)
            return True
        except asyncio.QueueFull:
            return False

    async def put_nowait_batch(self, items):
        if self.maxsize > 0 and len(items) + self.queue.qsize() > self.maxsize:
            return False
        for item in items:
            self.queue.put_nowait(item)
        return True

    async def get_nowait(self):
        try:
            return True, self.queue.get_nowait()
        except asyncio.QueueEmpty:
            return False, None

    async def get_nowait_batch(self, num_items):
        if num_items > self.queue.qsize():
            return False, []
        return True, [self.queue.get_nowait() for _ in range(num_items)]


class Queue:
    """Queue(maxsize=0, actor_options=None): maxsize 0 is unbounded;
    actor_options are the holding actor's (@atl.remote options, say pod=).
    A Queue passed to a task or an actor is the same queue there."""

    def __init__(self, maxsize=0, actor_options=None):
        import atl
        self.maxsize = maxsize
        self.actor = atl.remote(_QueueActor).options(**(actor_options or {})).remote(maxsize)

    def __len__(self):
        return self.size()

    def size(self):
        return self.qsize()

    def qsize(self):
        import atl
        return atl.get(self.actor.qsize.remote())

    def empty(self):
        import atl
        return atl.get(self.actor.empty.remote())

    def full(self):
        import atl
        return atl.get(self.actor.full.remote())

    def put(self, item, block=True, timeout=None):
        """Adds `item`; when full, waits (up to `timeout` s, then Full), or
        raises Full at once with block=False."""
        import atl
        if not block:
            return self.put_nowait(item)
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        if not atl.get(self.actor.put.remote(item, timeout)):
            raise Full
        return None

    async def put_async(self, item, block=True, timeout=None):
        """put() for a coroutine (`await q.put_async(item)`), as Ray's: Full
        when it cannot (block=False, or `timeout` s passed)."""
        if not block:
            if not await self.actor.put_nowait.remote(item):
                raise Full
            return None
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        if not await self.actor.put.remote(item, timeout):
            raise Full
        return None

    def get(self, block=True, timeout=None):
        """The first item; when empty, waits (up to `timeout` s, then Empty),
        or raises Empty at once with block=False."""
        import atl
        if not block:
            return self.get_nowait()
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        ok, item = atl.get(self.actor.get.remote(timeout))
        if not ok:
            raise Empty
        return item

    async def get_async(self, block=True, timeout=None):
        """get() for a coroutine (`item = await q.get_async()`), as Ray's:
        Empty when there is none (block=False, or `timeout` s passed)."""
        if not block:
            ok, item = await self.actor.get_nowait.remote()
        elif timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        else:
            ok, item = await self.actor.get.remote(timeout)
        if not ok:
            raise Empty
        return item

    def put_nowait(self, item):
        import atl
        if not atl.get(self.actor.put_nowait.remote(item)):
            raise Full
        return None

    def put_nowait_batch(self, items):
        """Every item of `items`, or none and Full when they do not all fit."""
        import atl
        if not isinstance(items, (list, tuple)):
            raise TypeError("put_nowait_batch takes a list of items")
        if not atl.get(self.actor.put_nowait_batch.remote(list(items))):
            raise Full(f"cannot add {len(items)} items to a queue of size {self.qsize()} and "
                       f"maxsize {self.maxsize}")
        return None

    def get_nowait(self):
        import atl
        ok, item = atl.get(self.actor.get_nowait.remote())
        if not ok:
            raise Empty
        return item

    def get_nowait_batch(self, num_items):
        """`num_items` items, or Empty when fewer are there."""
        import atl
        if not isinstance(num_items, int) or num_items < 0:
            raise ValueError("'num_items' must be a non-negative int")
        ok, items = atl.get(self.actor.get_nowait_batch.remote(num_items))
        if not ok:
            raise Empty(f"cannot get {num_items} items from a queue of size {self.qsize()}")
        return items

    def shutdown(self, force=False, grace_period_s=5):
        """Ends the holding actor; the queue is then unusable."""
        import atl
        if self.actor is not None:
            atl.kill(self.actor)
        self.actor = None
