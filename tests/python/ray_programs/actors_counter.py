import ray


@ray.remote
class Counter:
    def __init__(self):
        self.value = 0

    def increment(self):
        self.value += 1
        return self.value

    def get_counter(self):
        return self.value


counter = Counter.remote()
obj_ref = counter.increment.remote()
print(ray.get(obj_ref))
counters = [Counter.remote() for _ in range(4)]
[c.increment.remote() for c in counters]
futures = [c.increment.remote() for c in counters]
print(ray.get(futures))
