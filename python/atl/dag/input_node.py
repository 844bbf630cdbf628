"""ray.dag.input_node: atl.dag's (see atl/dag/__init__.py)."""
from . import InputNode, InputAttributeNode, DAGInputData  # noqa: F401
