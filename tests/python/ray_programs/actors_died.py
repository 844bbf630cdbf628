import os
import ray
from ray.exceptions import RayActorError


@ray.remote
class Fragile:
    def crash(self):
        os._exit(1)


f = Fragile.remote()
try:
    ray.get(f.crash.remote())
except RayActorError:
    print("RayActorError")
