# Ray Core's guide, "Type hints in Ray": ObjectRef[T] and ActorHandle as a
# program's annotations (a module's are evaluated when it runs).
import ray
from ray import ObjectRef
from ray.actor import ActorHandle


@ray.remote
def f(a: int) -> str:
    return "a = {}".format(a + 1)


ref: ray.ObjectRef[str] = f.remote(1)
print(ray.get(ref))


@ray.remote
def g(b: ObjectRef[str]) -> int:
    return len(b)


refs: list[ObjectRef[str]] = [ray.put("hello")]
print(ray.get(g.remote(refs[0])), isinstance(ref, ObjectRef))


@ray.remote
class Demo:
    def __init__(self, x: int):
        self.x = x

    def get(self) -> int:
        return self.x


h: ActorHandle[Demo] = Demo.remote(3)
print(isinstance(h, ActorHandle), ray.get(h.get.remote()))
