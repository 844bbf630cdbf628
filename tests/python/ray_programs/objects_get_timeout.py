import time
import ray
from ray.exceptions import GetTimeoutError


@ray.remote
def long_running_function():
    time.sleep(8)


obj_ref = long_running_function.remote()
try:
    ray.get(obj_ref, timeout=1)
except GetTimeoutError:
    print("`get` timed out.")
