import asyncio
import ray


@ray.remote(num_cpus=0)
class SignalActor:
    def __init__(self):
        self.ready_event = asyncio.Event()

    def send(self, clear=False):
        self.ready_event.set()
        if clear:
            self.ready_event.clear()

    async def wait(self, should_wait=True):
        if should_wait:
            await self.ready_event.wait()


@ray.remote
def wait_and_go(signal):
    ray.get(signal.wait.remote())
    return "go!"


signal = SignalActor.remote()
tasks = [wait_and_go.remote(signal) for _ in range(3)]
ready, _ = ray.wait(tasks, timeout=1)
print("before send", len(ready))
ray.get(signal.send.remote())
print(ray.get(tasks))
