import ray


@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n


counter = Counter.options(name="some_name").remote()
ray.get(counter.inc.remote())
same = ray.get_actor("some_name")
print(ray.get(same.inc.remote()))
try:
    ray.get_actor("nobody")
except ValueError:
    print("no actor named nobody")
again = Counter.options(name="some_name", get_if_exists=True).remote()
print(ray.get(again.inc.remote()))
