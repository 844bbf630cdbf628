import ray


@ray.remote
def fib(n):
    if n <= 1:
        return n
    return sum(ray.get([fib.remote(n - 1), fib.remote(n - 2)]))


print(ray.get(fib.remote(6)))
