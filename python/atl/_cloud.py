"""cloudpickle, which sends what a driver's script defines (functions,
lambdas, classes, their instances, its exceptions) by value: the image's own
where it has one, else the copy atl ships (atl._vendor.cloudpickle, 2.2.0,
for the Pythons it supports: up to 3.11), so a Python with only what Ray
brings (Ray vendors its own, as ray.cloudpickle) sends them too. None where
neither serves: atl._serialize's own encoding then sends functions and
classes, not instances of the script's classes."""
import sys

_module = False  # not looked for yet


def cloudpickle():
    """The cloudpickle module, or None."""
    global _module
    if _module is False:
        try:
            import cloudpickle as module
        except ImportError:
            module = None
            if sys.version_info < (3, 12):
                try:
                    from ._vendor import cloudpickle as module
                except ImportError:
                    module = None
        _module = module
    return _module
