import random
import time
import ray


@ray.remote
def work(i):
    time.sleep(random.random() / 20)
    return i


refs = [work.remote(i) for i in range(20)]
done = []
while refs:
    ready, refs = ray.wait(refs, num_returns=1)
    done.append(ray.get(ready[0]))
print(sorted(done) == list(range(20)), len(done))
