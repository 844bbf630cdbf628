import ray


@ray.remote
def task():
    for i in range(5):
        if i == 1:
            raise ValueError
        yield i


gen = task.remote()
print(ray.get(next(gen)))
try:
    ray.get(next(gen))
except ValueError as e:
    print("Exception is raised when i == 1 as expected", isinstance(e, ValueError))
try:
    next(gen)
except StopIteration:
    print("then the generator is done")
