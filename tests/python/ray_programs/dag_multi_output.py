# Ray Core's guide, the DAG API's MultiOutputNode, and actors made outside
# the DAG (.remote) reused by every execution.
import ray
from ray.dag.input_node import InputNode
from ray.dag.output_node import MultiOutputNode


@ray.remote
def f(input):
    return input + 1


with InputNode() as input_data:
    dag = MultiOutputNode([f.bind(input_data["x"]), f.bind(input_data["y"])])

refs = dag.execute({"x": 1, "y": 2})
print(ray.get(refs))


@ray.remote
class Worker:
    def __init__(self):
        self.forwarded = 0

    def forward(self, input_data: int):
        self.forwarded += 1
        return input_data + 1

    def num_forwarded(self):
        return self.forwarded


# Create an actor via ``remote`` API not ``bind`` API to avoid
# killing actors when a DAG is finished.
worker = Worker.remote()

with InputNode() as input_data:
    dag = MultiOutputNode([worker.forward.bind(input_data)])

# Actors are reused. The DAG definition doesn't include
# actor creation.
print(ray.get(dag.execute(1)))
print(ray.get(dag.execute(2)))
print(ray.get(dag.execute(3)))

# You can still use other actor methods via `remote` API.
print(ray.get(worker.num_forwarded.remote()))
