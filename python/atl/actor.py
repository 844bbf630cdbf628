"""Ray's `ray.actor` names: `from ray.actor import ActorHandle` ports as
`from atl.actor import ActorHandle`."""
import sys

from ._actors import ActorClass, ActorHandle  # noqa: F401

__all__ = ["ActorClass", "ActorHandle", "exit_actor"]


def exit_actor():
    """Ends the actor this process hosts, from one of its methods, as Ray's
    ray.actor.exit_actor(): its callers' pending calls fail with
    ActorDiedError (RayActorError)."""
    import os
    from . import _actors
    if _actors.hosted_actor is None:
        raise TypeError("exit_actor() is called from an actor's method, and this process "
                        "hosts no actor")
    sys.stdout.flush()
    sys.stderr.flush()
    _actors.end_for_good()  # one the head restarts is not started again
    os._exit(0)
