import ray


@ray.remote(scheduling_strategy="SPREAD")
def spread_func(x):
    return x + 1


print(ray.get([spread_func.remote(i) for i in range(6)]))


@ray.remote(num_cpus=1)
class SpreadActor:
    def get(self):
        return 1


actors = [SpreadActor.options(scheduling_strategy="SPREAD").remote() for _ in range(2)]
print(ray.get([a.get.remote() for a in actors]))
