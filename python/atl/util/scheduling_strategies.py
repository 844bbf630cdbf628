"""Ray's scheduling strategies, as Ray spells them, for `.options(
scheduling_strategy=...)`: a placement group's bundle, or "SPREAD" (each
call on the next worker pod in turn), or "DEFAULT" (a warm process on any
pod). Any other strategy is refused by name (atl/_options.py)."""


class PlacementGroupSchedulingStrategy:
    """Runs in `placement_group`'s bundle `placement_group_bundle_index`
    (-1: the group's bundles in turn, call after call)."""

    def __init__(self, placement_group, placement_group_bundle_index=-1,
                 placement_group_capture_child_tasks=None):
        if not isinstance(placement_group_bundle_index, int) or placement_group_bundle_index < -1:
            raise TypeError(f"PlacementGroupSchedulingStrategy: placement_group_bundle_index="
                            f"{placement_group_bundle_index!r}: a bundle's index, or -1 for any")
        self.placement_group = placement_group
        self.placement_group_bundle_index = placement_group_bundle_index
        self.placement_group_capture_child_tasks = placement_group_capture_child_tasks


class NodeAffinitySchedulingStrategy:
    """Runs on the node `node_id`: a worker pod's name (what
    atl.get_runtime_context().get_node_id() says in a task or actor, and
    atl.nodes() lists as "pod"). soft=True is taken as Ray takes it while the
    node is there; when it is gone the call fails, naming it, rather than
    running elsewhere."""

    def __init__(self, node_id, soft, _spill_on_unavailable=False, _fail_on_unavailable=False):
        if not isinstance(node_id, str) or not node_id:
            raise TypeError(f"NodeAffinitySchedulingStrategy: node_id={node_id!r}: a worker "
                            f"pod's name (atl.nodes()' \"pod\")")
        self.node_id = node_id
        self.soft = soft
