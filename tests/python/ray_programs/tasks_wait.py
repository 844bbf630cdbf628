import time
import ray


@ray.remote
def sleep_for(seconds):
    time.sleep(seconds)
    return seconds


refs = [sleep_for.remote(0), sleep_for.remote(0.1), sleep_for.remote(60)]
ready, not_ready = ray.wait(refs, num_returns=2, timeout=30)
print(len(ready), len(not_ready), sorted(ray.get(ready)))
ready, not_ready = ray.wait(not_ready, timeout=0.1)
print(len(ready), len(not_ready))
