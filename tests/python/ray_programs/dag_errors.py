# The DAG API's refusals, as Ray words them: .remote on a bound method, an
# InputNode given to an actor's constructor, a node's task that raises.
import ray
from ray.dag.input_node import InputNode


@ray.remote
class Counter:
    def __init__(self, start):
        self.n = start

    def add(self, k):
        self.n += k
        return self.n


@ray.remote
def fail(x):
    raise ValueError(f"bad input {x}")


@ray.remote
def double(x):
    return 2 * x


node = Counter.bind(1)
try:
    node.add.remote(1)
except AttributeError as e:
    print("AttributeError", ".bind()" in str(e))

with InputNode() as inp:
    try:
        Counter.bind(inp)
    except ValueError as e:
        print("ValueError", "InputNode" in str(e))
    dag = double.bind(fail.bind(inp))
try:
    ray.get(dag.execute(7))
except ValueError as e:
    print("ValueError", "bad input 7" in str(e))

with InputNode() as inp:
    dag = node.add.bind(inp)
print(ray.get(dag.execute(5)))
