import ray


@ray.remote
def echo_and_get(x_list):  # list of refs: not resolved
    return [type(x).__name__ for x in x_list], [ray.get(x) for x in x_list]


a, b, c = ray.put(1), ray.put(2), ray.put(3)
print(ray.get(echo_and_get.remote([a, b, c])))
print(type(a).__name__)
