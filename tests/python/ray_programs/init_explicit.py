import ray

ray.init()
ray.init(ignore_reinit_error=True)


@ray.remote
def hello():
    return "hello"


print(ray.get(hello.remote()))
ray.shutdown()
print(ray.is_initialized())
