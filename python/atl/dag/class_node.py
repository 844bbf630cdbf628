"""ray.dag.class_node: atl.dag's (see atl/dag/__init__.py)."""
from . import ClassNode, ClassMethodNode  # noqa: F401
