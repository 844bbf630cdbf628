import ray


@ray.remote
class Attempts:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1
        return self.n


@ray.remote(max_retries=3)
def raises(attempts):
    ray.get(attempts.bump.remote())
    raise RuntimeError("application error")


a = Attempts.remote()
try:
    ray.get(raises.remote(a))
except RuntimeError:
    print("not retried:", ray.get(a.bump.remote()) - 1, "attempt")
