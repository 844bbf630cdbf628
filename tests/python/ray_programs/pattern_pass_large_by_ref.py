import ray

big = list(range(100_000))
big_ref = ray.put(big)


@ray.remote
def total(values):
    return sum(values)


print(ray.get([total.remote(big_ref) for _ in range(3)]))
