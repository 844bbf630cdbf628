import ray

ray.init()  # the state API does not start Ray itself
total = ray.cluster_resources()
print(total["CPU"] >= 4, ray.available_resources()["CPU"] <= total["CPU"])
print(ray.is_initialized())
