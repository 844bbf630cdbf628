import os
import ray


@ray.remote
def fail():
    raise KeyError("k")


@ray.remote(max_retries=0)
def crash():
    os._exit(1)


@ray.remote
class Bad:
    def __init__(self):
        raise ValueError("in the constructor")

    def f(self):
        return 1


# Ray's guide, "Fault tolerance": what each failure raises.
try:
    ray.get(fail.remote())
except ray.exceptions.RayTaskError as e:
    print("RayTaskError", type(e.cause).__name__, isinstance(e, KeyError))
try:
    ray.get(crash.remote())
except ray.exceptions.WorkerCrashedError:
    print("WorkerCrashedError")
b = Bad.remote()
print("made")
try:
    ray.get(b.f.remote())
except ray.exceptions.ActorDiedError as e:
    print("ActorDiedError", "in the constructor" in str(e))
print(issubclass(ray.exceptions.GetTimeoutError, TimeoutError))
print(issubclass(ray.exceptions.ActorDiedError, ray.exceptions.RayActorError))
print(issubclass(ray.exceptions.RayTaskError, ray.exceptions.RayError))
ready, not_ready = ray.wait([fail.remote()], fetch_local=False, timeout=60)
print(len(ready), len(not_ready))
