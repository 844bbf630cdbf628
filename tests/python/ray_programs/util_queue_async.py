# Ray Core's guide (utility classes): ray.util.queue.Queue from asyncio code
# (put_async/get_async), its batch calls, and Full/Empty as Ray raises them.
import asyncio

import ray
from ray.util.queue import Empty, Full, Queue

q = Queue(maxsize=3)
q.put_nowait_batch([1, 2, 3])
try:
    q.put_nowait(4)
except Full:
    print("Full")
print(q.get_nowait_batch(2), q.size(), q.full())


async def main():
    await q.put_async(9)
    first = await q.get_async()
    second = await q.get_async(block=False)
    try:
        await q.get_async(timeout=0.2)
    except Empty:
        print("Empty after the timeout")
    await q.put_async("a")
    await q.put_async("b")
    await q.put_async("c")
    try:
        await q.put_async("d", block=False)
    except Full:
        print("Full at once")
    return first, second


print(asyncio.run(main()))
print(q.qsize())


@ray.remote
def boom():
    raise KeyError("k")


try:
    ray.get(boom.remote())
except ray.exceptions.RayTaskError as e:
    cause = e.as_instanceof_cause()
    print(isinstance(cause, KeyError), isinstance(cause, ray.exceptions.RayTaskError))
