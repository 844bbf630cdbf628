# Ray Core's guide, "Lazy Computation Graphs with the Ray DAG API": a DAG of
# remote functions, bound (nothing runs) then executed.
import ray


@ray.remote
def func(src, inc=1):
    return src + inc


a_ref = func.bind(1, inc=2)
print(ray.get(a_ref.execute()))  # 1 + 2 = 3
b_ref = func.bind(a_ref, 3)
print(ray.get(b_ref.execute()))  # (1 + 2) + 3 = 6
c_ref = func.bind(b_ref, inc=a_ref)
print(ray.get(c_ref.execute()))  # ((1 + 2) + 3) + (1 + 2) = 9
print(type(a_ref.execute()).__name__)
