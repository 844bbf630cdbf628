# Ray's streaming generators (Ray Core's "Ray Generators" page): each item
# reaches the caller as it is yielded, so the caller can act on the first
# one while the generator is still running (here the generator waits for
# the caller's signal before its second item: gathered items would hang).
import asyncio
import time

import ray


@ray.remote
class Signal:
    def __init__(self):
        self.ready = False

    def send(self):
        self.ready = True

    def is_set(self):
        return self.ready


@ray.remote
def produce(signal):
    yield "first"
    while not ray.get(signal.is_set.remote()):
        time.sleep(0.01)
    yield "second"


signal = Signal.remote()
gen = produce.remote(signal)
print("task:", ray.get(next(gen)))
signal.send.remote()
print("task:", ray.get(next(gen)))
print("task ended:", next(gen, None) is None)


@ray.remote
class Producer:
    def __init__(self, signal):
        self.signal = signal

    def words(self):
        yield "hello"
        while not ray.get(self.signal.is_set.remote()):
            time.sleep(0.01)
        yield "world"


signal = Signal.remote()
producer = Producer.remote(signal)
gen = producer.words.remote()
print("actor:", ray.get(next(gen)))
signal.send.remote()
print("actor:", ray.get(next(gen)))


@ray.remote
class AsyncProducer:
    def __init__(self):
        self.event = asyncio.Event()

    async def release(self):
        self.event.set()

    async def ticks(self, n):
        for i in range(n):
            if i == 1:
                await self.event.wait()
            yield i


ticker = AsyncProducer.remote()
gen = ticker.ticks.remote(3)
print("async actor:", ray.get(next(gen)))
ray.get(ticker.release.remote())
print("async actor:", [ray.get(ref) for ref in gen])


@ray.remote
def counted(n):
    for i in range(n):
        yield i
    raise ValueError("after the items")


refs = []
try:
    for ref in counted.remote(2):
        refs.append(ray.get(ref))
except ValueError as e:
    print("error after", refs, "at the end:", "after the items" in str(e))
