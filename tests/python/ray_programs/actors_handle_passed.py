import time
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


@ray.remote
def f(counter):
    for _ in range(10):
        time.sleep(0.01)
        counter.increment.remote()
    return ray.get(counter.get_counter.remote()) >= 10


counter = Counter.remote()
print(ray.get([f.remote(counter) for _ in range(3)]))
print(ray.get(counter.get_counter.remote()))
