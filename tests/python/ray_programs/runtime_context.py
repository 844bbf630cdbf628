import ray


@ray.remote
def ids():
    ctx = ray.get_runtime_context()
    return isinstance(ctx.get_job_id(), str), isinstance(ctx.get_node_id(), str)


print(ray.get(ids.remote()))
