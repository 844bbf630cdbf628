import ray
from ray.util.placement_group import (placement_group, placement_group_table,
                                      remove_placement_group, get_current_placement_group)
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="PACK")
ray.get(pg.ready(), timeout=60)
table = placement_group_table(pg)
print(table["state"], table["strategy"], table["bundles"])
print(len(table["bundles_to_node_id"]))


@ray.remote(num_cpus=0)
def child():
    return get_current_placement_group()


@ray.remote(num_cpus=1)
def parent():
    return get_current_placement_group(), ray.get(child.remote())


@ray.remote(num_cpus=0)
class Inside:
    def group(self):
        return get_current_placement_group()


print(get_current_placement_group())
mine, childs = ray.get(parent.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
    placement_group=pg, placement_group_capture_child_tasks=True)).remote())
print(mine == pg, childs == pg)
mine, childs = ray.get(parent.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
    placement_group=pg)).remote())
print(mine == pg, childs)
a = Inside.options(scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=pg)).remote()
print(ray.get(a.group.remote()) == pg)
remove_placement_group(pg)
import time
deadline = time.monotonic() + 30
while placement_group_table(pg)["state"] != "REMOVED" and time.monotonic() < deadline:
    time.sleep(0.1)
print(placement_group_table(pg)["state"])
