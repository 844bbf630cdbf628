import ray


@ray.remote
class Stage:
    def __init__(self, k):
        self.k = k

    def run(self, x):
        return x * self.k


s1, s2 = Stage.remote(2), Stage.remote(3)
print(ray.get([s2.run.remote(s1.run.remote(i)) for i in range(5)]))
