import time
import ray


@ray.remote
def generator(n):
    for i in range(n):
        time.sleep(0.3)
        yield i


@ray.remote
def slow():
    time.sleep(30)
    return "slow"


# Ray's guide: a generator in ray.wait is ready once its next item is.
gen = generator.remote(3)
other = slow.remote()
items = []
while True:
    ready, _ = ray.wait([gen, other], num_returns=1, timeout=60)
    if gen not in ready:
        break
    try:
        items.append(ray.get(next(gen)))
    except StopIteration:
        break
print(items)
ray.cancel(other, force=True)
