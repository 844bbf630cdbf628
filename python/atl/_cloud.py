"""cloudpickle, which sends what a driver's script defines (functions,
lambdas, classes, their instances, its exceptions) by value: the image's own
where it has one, else the copy atl ships (atl._vendor.cloudpickle, 3.1.2,
as Ray 2.60 vendors it: Pythons 3.8 to 3.14), so a Python with only what
Ray brings (Ray vendors its own, as ray.cloudpickle) sends them too. None
where neither serves (a copy that failed to import): atl._serialize's own
encoding then sends functions and classes, not instances of the script's
classes."""
_module = False  # not looked for yet


def cloudpickle():
    """The cloudpickle module, or None."""
    global _module
    if _module is False:
        try:
            import cloudpickle as module
        except ImportError:
            try:
                from ._vendor import cloudpickle as module
            except ImportError:
                module = None
        _module = module
    return _module
