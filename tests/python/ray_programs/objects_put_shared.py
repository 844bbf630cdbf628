import ray

table = ray.put({i: i * i for i in range(1000)})


@ray.remote
def lookup(t, k):
    return t[k]


print(ray.get([lookup.remote(table, k) for k in (3, 10, 999)]))
