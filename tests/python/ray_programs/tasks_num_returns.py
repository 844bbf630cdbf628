import ray


@ray.remote(num_returns=3)
def return_multiple():
    return 0, 1, 2


object_ref0, object_ref1, object_ref2 = return_multiple.remote()
print(ray.get([object_ref0, object_ref1, object_ref2]))


@ray.remote
def return_single():
    return 0, 1, 2


print(ray.get(return_single.remote()))
