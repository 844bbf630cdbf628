import ray


@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n


@ray.remote(max_retries=3, retry_exceptions=True)
def flaky(counter):
    if ray.get(counter.inc.remote()) < 3:
        raise ValueError("not yet")
    return "third time lucky"


c = Counter.remote()
print(ray.get(flaky.remote(c)))


@ray.remote(max_retries=1, retry_exceptions=[KeyError])
def wrong_kind(counter):
    ray.get(counter.inc.remote())
    raise ValueError("not retried")


d = Counter.remote()
try:
    ray.get(wrong_kind.remote(d))
except ValueError:
    print("attempts", ray.get(d.inc.remote()) - 1)
