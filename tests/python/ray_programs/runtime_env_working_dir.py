import os
import ray

# Ray's guide: the job's files, from the driver's directory ("." here).
ray.init(runtime_env={"working_dir": "."})


@ray.remote
def sees():
    return os.path.exists("expected.json"), os.path.exists("runtime_env_working_dir.py")


@ray.remote
class Reader:
    def sees(self):
        return os.path.exists("expected.json")


print(ray.get(sees.remote()))
print(ray.get(Reader.remote().sees.remote()))
