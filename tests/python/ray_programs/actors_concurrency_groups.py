import asyncio
import threading
import time
import ray


# Ray's guide: "Limiting Concurrency Per-Method with Concurrency Groups".
@ray.remote(concurrency_groups={"io": 2, "compute": 4})
class AsyncIOActor:
    def __init__(self):
        self.running = {"io": 0, "compute": 0, "default": 0}
        self.peak = {"io": 0, "compute": 0, "default": 0}

    async def _track(self, group):
        self.running[group] += 1
        self.peak[group] = max(self.peak[group], self.running[group])
        await asyncio.sleep(1)
        self.running[group] -= 1
        return group

    @ray.method(concurrency_group="io")
    async def f1(self):
        return await self._track("io")

    @ray.method(concurrency_group="compute")
    async def f3(self):
        return await self._track("compute")

    async def f5(self):
        return await self._track("default")

    def peaks(self):
        return self.peak


a = AsyncIOActor.remote()
refs = [a.f1.remote() for _ in range(6)] + [a.f3.remote() for _ in range(8)] + \
    [a.f5.remote() for _ in range(3)]
print(sorted(set(ray.get(refs))))
peak = ray.get(a.peaks.remote())
print("io at most 2:", peak["io"] <= 2, "compute at most 4:", peak["compute"] <= 4)
print("ran together:", peak["compute"] > 1 and peak["default"] > 1)
# A call put in another group than its method's.
print(ray.get(a.f1.options(concurrency_group="compute").remote()))


@ray.remote(concurrency_groups={"io": 1})
class Threaded:
    def __init__(self):
        self.lock = threading.Lock()
        self.at_once = 0
        self.peak = 0

    @ray.method(concurrency_group="io")
    def slow(self):
        with self.lock:
            self.at_once += 1
            self.peak = max(self.peak, self.at_once)
        time.sleep(2)
        with self.lock:
            self.at_once -= 1
        return "slow"

    def quick(self):
        return "quick"

    def peak_io(self):
        return self.peak


t = Threaded.remote()
slow = [t.slow.remote() for _ in range(2)]
start = time.monotonic()
# The default group's call does not wait for the io group's.
print(ray.get(t.quick.remote()), time.monotonic() - start < 1.5)
print(ray.get(slow), ray.get(t.peak_io.remote()))
