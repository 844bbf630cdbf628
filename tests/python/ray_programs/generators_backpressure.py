# Ray's streaming-generator backpressure (_generator_backpressure_num_objects,
# as Ray's own tests use it): the generator pauses once that many of its
# items wait unconsumed by the caller, goes on as the caller's next takes
# them, and runs to its end once the caller drops the generator.
import time

import ray


@ray.remote
class Reporter:
    def __init__(self):
        self.reported = []

    def report(self, tag, i):
        self.reported.append((tag, i))

    def count(self, tag):
        return sum(1 for t, _ in self.reported if t == tag)


def settle(reporter, tag, expected, timeout=60):
    """The count for `tag` once it reaches `expected`, then a second more
    to show it stays there (a paused generator does not go on)."""
    deadline = time.time() + timeout
    while ray.get(reporter.count.remote(tag)) < expected and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    return ray.get(reporter.count.remote(tag))


@ray.remote(_generator_backpressure_num_objects=1)
def one_at_a_time(reporter, n):
    for i in range(n):
        ray.get(reporter.report.remote("task", i))
        yield i


reporter = Reporter.remote()
gen = one_at_a_time.remote(reporter, 10)
print("task, before any next:", settle(reporter, "task", 1))
for step in range(3):
    value = ray.get(next(gen))
    print("task, took", value, "-> produced", settle(reporter, "task", step + 2))
del gen  # dropped: the generator is no longer held back
print("task, after del:", settle(reporter, "task", 10))


@ray.remote
class Producer:
    @ray.method(_generator_backpressure_num_objects=3)
    def items(self, reporter, n):
        for i in range(n):
            ray.get(reporter.report.remote("actor", i))
            yield i * i


producer = Producer.remote()
gen = producer.items.remote(reporter, 8)
print("actor, before any next:", settle(reporter, "actor", 3))
print("actor, took", ray.get(next(gen)), "-> produced", settle(reporter, "actor", 4))
print("actor, the rest:", [ray.get(ref) for ref in gen])

gen = producer.items.options(_generator_backpressure_num_objects=-1).remote(reporter, 4)
print("actor, unbounded:", settle(reporter, "actor", 12))
print("actor, its items:", [ray.get(ref) for ref in gen])

try:
    @ray.remote(_generator_backpressure_num_objects=0)
    def never():
        yield 1
except ValueError:
    print("a bound of 0: ValueError")
