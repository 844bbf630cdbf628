import ray
from ray.util.placement_group import placement_group

pg = placement_group([{"CPU": 1}])
ready, unready = ray.wait([pg.ready()], timeout=60)
print(len(ready), len(unready))
print(pg.wait(timeout_seconds=10))
