import ray


@ray.remote(num_cpus=1)
def f():
    return "ran"


print(ray.get(f.options(num_cpus=2).remote()))
print(ray.get(f.options(name="renamed").remote()))
