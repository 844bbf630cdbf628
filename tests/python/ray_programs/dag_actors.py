# Ray Core's guide, the DAG API with classes and class methods: an actor made
# by the DAG, its method calls in the order they were bound.
import ray


@ray.remote
class Actor:
    def __init__(self, init_value):
        self.i = init_value

    def inc(self, x):
        self.i += x

    def get(self):
        return self.i


a1 = Actor.bind(10)  # Instantiate Actor with init_value 10.
val = a1.get.bind()  # ClassMethod that returns value from get() from the actor created.
print(ray.get(val.execute()))


@ray.remote
def combine(x, y):
    return x + y


a2 = Actor.bind(10)  # Instantiate another Actor with init_value 10.
a1.inc.bind(2)  # Call inc() on the actor created with increment of 2.
a1.inc.bind(4)  # Call inc() on the actor created with increment of 4.
a2.inc.bind(6)  # Call inc() on the actor created with increment of 6.

# Combine outputs from a1.get() and a2.get()
dag = combine.bind(a1.get.bind(), a2.get.bind())

# a1 +  a2 + inc(2) + inc(4) + inc(6)
# 10 + (10 + ( 2   +    4    +   6)) = 32
print(ray.get(dag.execute()))
print(ray.get(dag.execute()))  # each execute makes its actors anew
