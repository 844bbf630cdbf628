import ray

# A program for a cluster that is already up (`ray job submit`, a driver on
# its head): Ray's address "auto".
ray.init(address="auto")


@ray.remote
def f():
    return 1


print(ray.get(f.remote()))
print(ray.is_initialized())
ray.shutdown()
ray.init("auto", namespace="team")
print(ray.get_runtime_context().namespace)
