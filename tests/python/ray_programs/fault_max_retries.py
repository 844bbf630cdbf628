import os
import ray


@ray.remote
class Attempts:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1
        return self.n


@ray.remote(max_retries=2)
def dies_first(attempts):
    if ray.get(attempts.bump.remote()) < 2:
        os._exit(1)  # the worker process dies: a system failure, retried
    return "survived"


a = Attempts.remote()
print(ray.get(dies_first.remote(a)))
