import asyncio
import time
import ray


@ray.remote
class AsyncActor:
    async def run_concurrent(self):
        await asyncio.sleep(1)
        return "done"


actor = AsyncActor.remote()
start = time.time()
print(ray.get([actor.run_concurrent.remote() for _ in range(4)]))
print("concurrent", time.time() - start < 3.5)
