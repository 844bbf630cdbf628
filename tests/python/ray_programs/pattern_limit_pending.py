import ray


@ray.remote
def work(i):
    return i


MAX_NUM_PENDING_TASKS = 4
result_refs = []
total = 0
for i in range(30):
    if len(result_refs) > MAX_NUM_PENDING_TASKS:
        ready_refs, result_refs = ray.wait(result_refs, num_returns=1)
        total += sum(ray.get(ready_refs))
    result_refs.append(work.remote(i))
total += sum(ray.get(result_refs))
print(total)
