# cloudpickle 2.2.0 (https://github.com/cloudpipe/cloudpickle), as Debian 12
# ships it (python3-cloudpickle), BSD-3-Clause: see LICENSE. Shipped with
# atl so that a driver's script functions, classes and instances travel by
# value in an image without cloudpickle (Ray's own venv vendors its copy).
# The one change: imports relative to this package.
from .cloudpickle import *  # noqa
from .cloudpickle_fast import CloudPickler, dumps, dump  # noqa

# Conform to the convention used by python serialization libraries, which
# expose their Pickler subclass at top-level under the  "Pickler" name.
Pickler = CloudPickler

__version__ = '2.2.0'
