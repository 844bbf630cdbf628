# Ray Core's guide (tasks, GPU support): max_calls=1 so that a task's process
# exits after its call and what the call left behind (GPU memory, module
# state) goes with it; each call then starts from a fresh module.
import os

import ray

calls_here = 0


@ray.remote(max_calls=1)
def fresh():
    global calls_here
    calls_here += 1
    return calls_here, os.getpid()


results = [ray.get(fresh.remote()) for _ in range(3)]
print([count for count, _ in results])
print(len({pid for _, pid in results}))
print(ray.get(fresh.options(num_cpus=1).remote())[0])
try:
    fresh.options(max_calls=2)
except ValueError as e:
    print("ValueError", e)
try:
    ray.remote(max_calls=-1)(lambda: None)
except Exception as e:
    print(type(e).__name__)
