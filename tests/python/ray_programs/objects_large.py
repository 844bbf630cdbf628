import ray


@ray.remote
def size(blob):
    return len(blob)


blob = b"x" * (50 * 1024 * 1024)
ref = ray.put(blob)
print(ray.get([size.remote(ref) for _ in range(3)]))


@ray.remote
def make(n):
    return bytes(n)


print(len(ray.get(make.remote(20 * 1024 * 1024))))
