import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


@ray.remote
def node():
    return ray.get_runtime_context().get_node_id()


target = ray.get(node.remote())
placed = [ray.get(node.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
    node_id=target, soft=False)).remote()) for _ in range(4)]
print(all(p == target for p in placed))
