import time
import ray
from ray.exceptions import TaskCancelledError


@ray.remote
def blocking_operation():
    time.sleep(10e6)


obj_ref = blocking_operation.remote()
ray.cancel(obj_ref)
try:
    ray.get(obj_ref)
except TaskCancelledError:
    print("Object reference was cancelled.")

running = blocking_operation.remote()
time.sleep(1)  # under way
ray.cancel(running, force=True)
try:
    ray.get(running)
except ray.exceptions.TaskCancelledError:
    print("A running one too.")
