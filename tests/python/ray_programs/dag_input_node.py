# Ray Core's guide, the DAG API's InputNode: a DAG built once, run with
# different inputs; inputs by position, by key and by attribute.
from dataclasses import dataclass

import ray
from ray.dag.input_node import InputNode


@ray.remote
def a(user_input):
    return user_input * 2


@ray.remote
def b(user_input):
    return user_input + 1


@ray.remote
def c(x, y):
    return x + y


with InputNode() as dag_input:
    a_ref = a.bind(dag_input)
    b_ref = b.bind(dag_input)
    dag = c.bind(a_ref, b_ref)

print(ray.get(dag.execute(2)))  # (2 * 2) + (2 + 1) = 7
print(ray.get(dag.execute(3)))  # (3 * 2) + (3 + 1) = 10

with InputNode() as inp:
    dag = c.bind(inp[0], inp.y)
print(ray.get(dag.execute(5, y=6)))


@dataclass
class Point:
    x: int
    y: int


with InputNode() as inp:
    dag = c.bind(a.bind(inp.x), inp.y)
print(ray.get(dag.execute(Point(4, 1))))

with InputNode() as inp:
    dag = c.bind(inp["left"], inp["right"])
print(ray.get(dag.execute({"left": 10, "right": 20})))
