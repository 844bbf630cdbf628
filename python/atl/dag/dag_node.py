"""ray.dag.dag_node: atl.dag's (see atl/dag/__init__.py)."""
from . import DAGNode  # noqa: F401
