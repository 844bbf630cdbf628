import os
import ray

# The job's runtime_env: every task's and actor's environment.
ray.init(runtime_env={"env_vars": {"STAGE": "job", "COLOR": "blue"}})


@ray.remote
def stage():
    return os.environ.get("STAGE"), os.environ.get("COLOR")


@ray.remote
class Reader:
    def read(self):
        return os.environ.get("STAGE")


print(ray.get(stage.remote()))
# A task's own runtime_env is laid over the job's.
print(ray.get(stage.options(runtime_env={"env_vars": {"STAGE": "task"}}).remote()))
print(ray.get(Reader.remote().read.remote()))
ray.shutdown()
ray.init()
print(ray.get(stage.remote()))
