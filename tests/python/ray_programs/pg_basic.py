import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="PACK")
ray.get(pg.ready(), timeout=60)


@ray.remote(num_cpus=1)
def f(i):
    return i * 2


refs = [f.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
    placement_group=pg, placement_group_bundle_index=i)).remote(i) for i in range(2)]
print(ray.get(refs))
remove_placement_group(pg)
print("removed")
