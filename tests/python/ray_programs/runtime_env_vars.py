import os
import ray


@ray.remote
def myfunc():
    return os.environ.get("FOO")


print(ray.get(myfunc.options(runtime_env={"env_vars": {"FOO": "bar"}}).remote()))
