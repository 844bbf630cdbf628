import threading
import time
import ray


@ray.remote
class ThreadedActor:
    def __init__(self):
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def task(self):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.3)
        with self.lock:
            self.now -= 1

    def peak(self):
        return self.most


a = ThreadedActor.options(max_concurrency=3).remote()
ray.get([a.task.remote() for _ in range(3)])
print("ran together", ray.get(a.peak.remote()) > 1)
