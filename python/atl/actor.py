"""Ray's `ray.actor` names: `from ray.actor import ActorHandle` ports as
`from atl.actor import ActorHandle`."""
from ._actors import ActorClass, ActorHandle  # noqa: F401

__all__ = ["ActorClass", "ActorHandle"]
