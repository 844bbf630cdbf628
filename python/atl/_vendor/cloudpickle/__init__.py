# cloudpickle 3.1.2 (https://github.com/cloudpipe/cloudpickle, from PyPI), the
# version Ray 2.60 vendors, BSD-3-Clause: see LICENSE. Shipped with atl so
# that a driver's script functions, classes and instances travel by value in
# an image without cloudpickle (Ray's own venv has none at top level), on
# every Python atl runs on (3.8 to 3.14). Unchanged: its imports are relative.
from . import cloudpickle
from .cloudpickle import *  # noqa

__doc__ = cloudpickle.__doc__

__version__ = "3.1.2"

__all__ = [  # noqa
    "__version__",
    "Pickler",
    "CloudPickler",
    "dumps",
    "loads",
    "dump",
    "load",
    "register_pickle_by_value",
    "unregister_pickle_by_value",
]
