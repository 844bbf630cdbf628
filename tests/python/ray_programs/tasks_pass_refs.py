import ray


@ray.remote
def my_function():
    return 1


@ray.remote
def function_with_an_argument(value):
    return value + 1


obj_ref1 = my_function.remote()
assert ray.get(obj_ref1) == 1
# An ObjectRef as an argument: the task gets its value.
obj_ref2 = function_with_an_argument.remote(obj_ref1)
print(ray.get(obj_ref2))
