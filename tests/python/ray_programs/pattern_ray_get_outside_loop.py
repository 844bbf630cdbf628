import ray


@ray.remote
def f(i):
    return i


# The anti-pattern's fix: launch every task, then get them at once.
refs = [f.remote(i) for i in range(10)]
print(sum(ray.get(refs)))
