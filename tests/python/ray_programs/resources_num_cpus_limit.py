import time
import ray


@ray.remote(num_cpus=2)
def heavy(i):
    start = time.time()
    time.sleep(0.3)
    return start, time.time()


spans = ray.get([heavy.remote(i) for i in range(4)])
print("all ran", len(spans))
