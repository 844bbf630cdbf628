import ray
from ray.exceptions import RayTaskError


class MyException(Exception):
    pass


@ray.remote
def broken():
    raise MyException("this is broken")


try:
    ray.get(broken.remote())
except MyException as e:
    print("caught MyException", isinstance(e, RayTaskError), "this is broken" in str(e))


@ray.remote
def fails(x):
    return 1 / x


try:
    ray.get(fails.remote(0))
except ZeroDivisionError:
    print("caught ZeroDivisionError")
