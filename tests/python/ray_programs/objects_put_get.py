import ray

y = {"a": [1, 2, 3], "b": ("x", None)}
object_ref = ray.put(y)
print(ray.get(object_ref))
print(ray.get([ray.put(i) for i in range(3)]))
