import time
import ray
from ray.exceptions import RayActorError


@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n


old = Counter.options(name="counter").remote()
print(ray.get(old.inc.remote()))
ray.kill(old)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        ray.get_actor("counter")
        time.sleep(0.1)
    except ValueError:
        print("the name is free")
        break
# A new actor under the killed one's name: its calls go through, the
# killed one's handle still fails.
new = Counter.options(name="counter").remote()
print(ray.get(new.inc.remote()))
print(ray.get(ray.get_actor("counter").inc.remote()))
try:
    ray.get(old.inc.remote())
    print("the old handle reached the new actor")
except RayActorError:
    print("the old handle raised RayActorError")
