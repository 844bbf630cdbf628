import ray


@ray.remote
class Worker:
    def __init__(self):
        self.n = 0

    def add(self):
        self.n += 1
        return self.n


w = Worker.remote()
print(ray.get(w.__ray_ready__.remote()))
calls = [w.add.remote() for _ in range(3)]
# Ends the actor once the calls before it ran (manual termination, as
# Ray's guide shows it); a get of it raises RayActorError.
end = w.__ray_terminate__.remote()
print(ray.get(calls))
try:
    ray.get(end)
    print("the terminate call returned")
except ray.exceptions.RayActorError:
    print("the terminate call raised RayActorError")
try:
    ray.get(w.add.remote())
    print("still alive")
except ray.exceptions.RayActorError:
    print("a call after it raised RayActorError")
