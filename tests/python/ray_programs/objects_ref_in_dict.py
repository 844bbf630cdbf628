import ray


@ray.remote
def get_all(d):
    return {k: ray.get(v) for k, v in d.items()}


print(ray.get(get_all.remote({"a": ray.put(1), "b": ray.put(2)})))
