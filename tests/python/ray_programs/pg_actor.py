import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

pg = placement_group([{"CPU": 1}])
ray.get(pg.ready())


@ray.remote(num_cpus=1)
class Actor:
    def ready(self):
        return "ready"


a = Actor.options(scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=pg)).remote()
print(ray.get(a.ready.remote()))
