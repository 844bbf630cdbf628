import asyncio
import os
import tempfile
import time
import ray


@ray.remote
class Actor:
    async def f(self):
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "cancelled inside"
        return "slept"


actor = Actor.remote()
ref = actor.f.remote()
time.sleep(1)  # under way
ray.cancel(ref)
try:
    ray.get(ref)
except (ray.exceptions.TaskCancelledError, ray.exceptions.RayTaskError):
    print("Object reference was cancelled.")


@ray.remote
class SyncActor:
    def __init__(self):
        self.is_canceled = False

    def long_running_method(self, started):
        open(started, "w").close()  # under way: the driver may cancel now
        for i in range(1000):
            if ray.get_runtime_context().is_canceled():
                self.is_canceled = True
                return "canceled"
            time.sleep(0.01)
        return "completed"

    def get_cancel_status(self):
        return self.is_canceled


actor = SyncActor.remote()
started = os.path.join(tempfile.mkdtemp(), "started")
actor_task_ref = actor.long_running_method.remote(started)
while not os.path.exists(started):
    time.sleep(0.01)
ray.cancel(actor_task_ref)
try:
    ray.get(actor_task_ref)
except ray.exceptions.TaskCancelledError:
    print("Actor task was cancelled")
print(f"Actor detected cancellation: {ray.get(actor.get_cancel_status.remote())}")
done = actor.get_cancel_status.remote()
ray.get(done)
ray.cancel(done)  # finished: nothing happens
print("a finished call keeps its value:", ray.get(done))
