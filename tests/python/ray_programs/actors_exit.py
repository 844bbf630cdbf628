import ray
from ray.exceptions import RayActorError


@ray.remote
class Quitter:
    def ping(self):
        return "pong"

    def exit(self):
        ray.actor.exit_actor()


q = Quitter.remote()
print(ray.get(q.ping.remote()))
try:
    ray.get(q.exit.remote())
except RayActorError:
    print("exited")
try:
    ray.get(q.ping.remote())
except RayActorError:
    print("gone after exit")
