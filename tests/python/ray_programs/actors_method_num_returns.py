import ray


@ray.remote
class Splitter:
    @ray.method(num_returns=2)
    def split(self, s):
        head, _, tail = s.partition(" ")
        return head, tail


s = Splitter.remote()
head_ref, tail_ref = s.split.remote("hello big world")
print(ray.get(head_ref), "|", ray.get(tail_ref))
