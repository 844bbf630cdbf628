import ray


@ray.remote
class Worker:
    def work(self, x):
        return x * 10


@ray.remote
class Supervisor:
    def __init__(self, n):
        self.workers = [Worker.remote() for _ in range(n)]

    def work(self, x):
        return ray.get([w.work.remote(x + i) for i, w in enumerate(self.workers)])


sup = Supervisor.remote(3)
print(ray.get(sup.work.remote(1)))
