"""ray.dag.output_node: atl.dag's (see atl/dag/__init__.py)."""
from . import MultiOutputNode  # noqa: F401
