"""Ray's `ray.util.placement_group` module path: `from
ray.util.placement_group import placement_group` ports unchanged but for
the package's name."""
from .. import PlacementGroup, placement_group, remove_placement_group  # noqa: F401
from .._placement import (get_current_placement_group, get_placement_group,  # noqa: F401
                          placement_group_table)

__all__ = ["PlacementGroup", "placement_group", "remove_placement_group",
           "placement_group_table", "get_current_placement_group", "get_placement_group"]
