# Ray Core's guide (actors, tasks): calls made and not waited for ("fire and
# forget") from tasks that return at once: each call is made, whichever
# process the task ran in (an env of its own, a placement group's bundle).
import time

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy


@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k

    def value(self):
        return self.n


@ray.remote
def report(counter, times):
    for _ in range(times):
        counter.add.remote(1)
    return "sent"


counter = Counter.remote()
print(ray.get(report.remote(counter, 10)))
print(ray.get(report.options(runtime_env={"env_vars": {"STAGE": "eval"}}).remote(counter, 20)))
pg = placement_group([{"CPU": 1}])
ray.get(pg.ready())
print(ray.get(report.options(
    scheduling_strategy=PlacementGroupSchedulingStrategy(pg)).remote(counter, 30)))
deadline = time.time() + 30
while ray.get(counter.value.remote()) < 60 and time.time() < deadline:
    time.sleep(0.1)
print(ray.get(counter.value.remote()))
