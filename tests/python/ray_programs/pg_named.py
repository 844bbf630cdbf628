import ray
from ray.util.placement_group import get_placement_group, placement_group

# A named placement group, found by its name (from any driver of the job).
pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="SPREAD", name="shared_pg")
ray.get(pg.ready())
found = get_placement_group("shared_pg")
print(found.bundle_specs, found == pg)
try:
    get_placement_group("no_such_pg")
except ValueError:
    print("no group named no_such_pg")
ray.util.remove_placement_group(pg)
