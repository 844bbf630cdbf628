"""Ray's `ray.util` names that atl has, so `from ray.util import ...` ports
as `from atl.util import ...`: placement groups (also as the module
atl.util.placement_group), ActorPool, the queue (atl.util.queue), list_named_actors, the
scheduling strategies in atl.util.scheduling_strategies, multiprocessing's Pool
(atl.util.multiprocessing), register_serializer, inspect_serializability and
get_node_ip_address."""
from .placement_group import PlacementGroup, placement_group, remove_placement_group  # noqa: F401
from .placement_group import (get_current_placement_group, get_placement_group,  # noqa: F401
                              placement_group_table)
from .actor_pool import ActorPool  # noqa: F401
from . import queue  # noqa: F401
from .._actors import list_named_actors  # noqa: F401
from ._serialization import (deregister_serializer, inspect_serializability,  # noqa: F401
                             register_serializer)


def get_node_ip_address() -> str:
    """This process's host's address as the job's other hosts reach it, as
    Ray's: the local address of a route to the head ($ATL_ADDRESS), else
    127.0.0.1."""
    import os
    import socket
    head = (os.environ.get("ATL_ADDRESS") or "").rpartition(":")[0].strip("[]")
    if not head:
        return "127.0.0.1"
    try:
        family = socket.AF_INET6 if ":" in head else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((head, 9))  # (no packet is sent: a route is chosen)
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
