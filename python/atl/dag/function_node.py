"""ray.dag.function_node: atl.dag's (see atl/dag/__init__.py)."""
from . import FunctionNode  # noqa: F401
