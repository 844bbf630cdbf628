"""Ray's `ray.util` names that atl has, so `from ray.util import ...` ports
as `from atl.util import ...`: placement groups, and the scheduling
strategies in atl.util.scheduling_strategies."""
from .. import PlacementGroup, placement_group, remove_placement_group  # noqa: F401
