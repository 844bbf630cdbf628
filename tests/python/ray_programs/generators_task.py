import ray


@ray.remote
def task():
    for i in range(5):
        yield i


gen = task.remote()
print([ray.get(ref) for ref in gen])
