import ray


@ray.remote
def inner():
    return "inner value"


@ray.remote
def outer():
    return inner.remote()


ref_of_ref = outer.remote()
inner_ref = ray.get(ref_of_ref)
print(type(inner_ref).__name__, ray.get(inner_ref))
