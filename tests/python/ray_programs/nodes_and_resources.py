import ray

ray.init()


def plain(x):
    return x + 1


alive = [n for n in ray.nodes() if n["Alive"]]
print(len(alive) >= 1)
print(all({"NodeID", "NodeManagerAddress", "Resources"} <= set(n) for n in alive))
print(sum(n["Resources"].get("CPU", 0) for n in alive) == ray.cluster_resources()["CPU"])
print(type(ray.util.get_node_ip_address()).__name__)


@ray.remote(num_cpus=1)
def held():
    return ray.get_runtime_context().get_assigned_resources()


print(ray.get(held.remote()))
# ray.remote as a call, not a decorator.
print(ray.get(ray.remote(plain).remote(1)))
print(ray.get(ray.remote(num_cpus=1)(plain).remote(2)))
