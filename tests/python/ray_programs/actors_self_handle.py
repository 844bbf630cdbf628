# Ray Core's guide (actors): an actor's handle to itself
# (get_runtime_context().current_actor), passed on to a task that calls it
# back; a method the class lacks is an AttributeError at the handle.
import ray


@ray.remote
def call_back(handle, x):
    return ray.get(handle.record.remote(x))


@ray.remote
class Recorder:
    def __init__(self):
        self.seen = []

    def record(self, x):
        self.seen.append(x)
        return len(self.seen)

    def delegate(self, x):
        me = ray.get_runtime_context().current_actor
        return call_back.remote(me, x)

    def seen_all(self):
        return self.seen


r = Recorder.options(max_concurrency=2).remote()
print(ray.get(ray.get(r.delegate.remote("a"))))
print(ray.get(r.seen_all.remote()))
try:
    r.no_such_method.remote()
except AttributeError:
    print("AttributeError")
try:
    ray.get_runtime_context().current_actor
except Exception as e:
    print(type(e).__name__)
