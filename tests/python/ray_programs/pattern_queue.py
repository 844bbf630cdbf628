import ray
from ray.util.queue import Empty, Queue

queue = Queue(maxsize=100)


@ray.remote
def consumer(id, queue):
    got = []
    try:
        while True:
            got.append(queue.get(block=True, timeout=2))
    except Empty:
        return got


[queue.put(i) for i in range(10)]
consumers = [consumer.remote(i, queue) for i in range(2)]
items = ray.get(consumers)
print(sorted(items[0] + items[1]))
print(queue.empty(), queue.qsize())
