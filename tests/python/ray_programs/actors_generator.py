import ray


@ray.remote
class Actor:
    def f(self):
        for i in range(5):
            yield i


actor = Actor.remote()
print([ray.get(ref) for ref in actor.f.remote()])
