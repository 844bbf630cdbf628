import time
import ray
from ray.exceptions import RayActorError


@ray.remote
class Actor:
    def ping(self):
        return "pong"


a = Actor.remote()
print(ray.get(a.ping.remote()))
ray.kill(a)
# The kill takes effect at once or soon (under load, Ray ran a call made
# right after it): calls fail from then on.
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        ray.get(a.ping.remote())
        time.sleep(0.1)
    except RayActorError:
        print("the actor is dead")
        break
