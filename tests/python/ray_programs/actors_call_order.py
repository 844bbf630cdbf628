import ray


@ray.remote
class Log:
    def __init__(self):
        self.seen = []

    def add(self, i):
        self.seen.append(i)

    def get(self):
        return self.seen


log = Log.remote()
for i in range(2000):
    log.add.remote(i)
seen = ray.get(log.get.remote())
print(len(seen), seen == sorted(seen))
