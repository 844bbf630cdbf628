import ray


@ray.remote
def partial_sum(lo, hi):
    if hi - lo <= 10:
        return sum(range(lo, hi))
    mid = (lo + hi) // 2
    return sum(ray.get([partial_sum.remote(lo, mid), partial_sum.remote(mid, hi)]))


print(ray.get(partial_sum.remote(0, 80)))
