import ray

ray.init(namespace="colors")


@ray.remote
class Actor:
    def __init__(self, color):
        self.color = color

    def color_of(self):
        return self.color


a = Actor.options(name="orange", lifetime="detached").remote("orange")
print(ray.get(ray.get_actor("orange").color_of.remote()))
print(ray.get_runtime_context().namespace)
b = Actor.options(name="orange", namespace="fruit", lifetime="detached").remote("citrus")
print(ray.get(ray.get_actor("orange", namespace="fruit").color_of.remote()))
print(ray.get(ray.get_actor("orange").color_of.remote()))
try:
    ray.get_actor("orange", namespace="nowhere")
except ValueError:
    print("no orange in nowhere")
print(sorted(ray.util.list_named_actors()))
print(sorted((d["namespace"], d["name"]) for d in ray.util.list_named_actors(all_namespaces=True)
             if d["namespace"] in ("colors", "fruit")))


@ray.remote
def find():
    # A task runs in its driver's namespace.
    return ray.get(ray.get_actor("orange").color_of.remote())


print(ray.get(find.remote()))
same = Actor.options(name="orange", get_if_exists=True).remote("never made")
print(ray.get(same.color_of.remote()))
ray.kill(a)
ray.kill(b)
