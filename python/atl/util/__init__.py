"""Ray's `ray.util` names that atl has, so `from ray.util import ...` ports
as `from atl.util import ...`: placement groups (also as the module
atl.util.placement_group), ActorPool, the queue (atl.util.queue), list_named_actors, the
scheduling strategies in atl.util.scheduling_strategies, and multiprocessing's Pool
(atl.util.multiprocessing)."""
from .placement_group import PlacementGroup, placement_group, remove_placement_group  # noqa: F401
from .placement_group import get_current_placement_group, placement_group_table  # noqa: F401
from .actor_pool import ActorPool  # noqa: F401
from . import queue  # noqa: F401
from .._actors import list_named_actors  # noqa: F401
