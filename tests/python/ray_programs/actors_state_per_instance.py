import ray


@ray.remote
class Accumulator:
    def __init__(self, start):
        self.total = start

    def add(self, x):
        self.total += x
        return self.total


accs = [Accumulator.remote(i * 100) for i in range(3)]
for a in accs:
    for x in range(5):
        a.add.remote(x)
print(ray.get([a.add.remote(0) for a in accs]))
