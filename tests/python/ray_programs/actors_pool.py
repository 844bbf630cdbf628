import ray
from ray.util import ActorPool


@ray.remote
class Actor:
    def double(self, n):
        return n * 2


a1, a2 = Actor.remote(), Actor.remote()
pool = ActorPool([a1, a2])
print(list(pool.map(lambda a, v: a.double.remote(v), [1, 2, 3, 4])))
print(sorted(pool.map_unordered(lambda a, v: a.double.remote(v), [5, 6, 7])))
pool.submit(lambda a, v: a.double.remote(v), 10)
pool.submit(lambda a, v: a.double.remote(v), 20)
print(pool.get_next(), pool.get_next(), pool.has_next())
