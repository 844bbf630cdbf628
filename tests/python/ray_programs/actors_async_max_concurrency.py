import asyncio
import ray


@ray.remote
class Limited:
    def __init__(self):
        self.now = 0
        self.most = 0

    async def work(self):
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.2)
        self.now -= 1

    async def peak(self):
        return self.most


a = Limited.options(max_concurrency=2).remote()
ray.get([a.work.remote() for _ in range(6)])
print("at most", ray.get(a.peak.remote()))
