import ray
from ray.exceptions import RayActorError


@ray.remote
class Actor:
    def ping(self):
        return "pong"


a = Actor.remote()
print(ray.get(a.ping.remote()))
ray.kill(a)
try:
    ray.get(a.ping.remote())
except RayActorError:
    print("the actor is dead")
