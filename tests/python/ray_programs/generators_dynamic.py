import ray


@ray.remote(num_returns="dynamic")
def split(array, chunk_size):
    while len(array) > 0:
        yield array[:chunk_size]
        array = array[chunk_size:]


dynamic_ref = split.remote(list(range(10)), 4)
print([ray.get(ref) for ref in ray.get(dynamic_ref)])
