import ray

FACTOR = 7
words = ["atl", "ray"]


def helper(x):
    return x * FACTOR


@ray.remote
def compute(x):
    return helper(x), len(words)


print(ray.get(compute.remote(6)))
