import time
import ray


@ray.remote
class Busy:
    def forever(self):
        time.sleep(3600)


b = Busy.remote()
b.forever.remote()
time.sleep(0.5)
print("the driver ends")
