"""Ray's `ray.exceptions`, as atl raises them, so `from ray.exceptions import
...` ports as `from atl.exceptions import ...`: each name is atl's error of
that meaning (RayTaskError is TaskError: `except ValueError` still catches a
remote ValueError, as Ray's RayTaskError(ValueError) does). Ray's errors
atl never raises (ActorUnavailableError: atl's actors are alive or gone) are
not here: importing one fails, naming it."""
from ._capi import AtlError, GetTimeoutError
from ._errors import (ActorDiedError, OwnerDiedError, RemoteError, TaskCancelledError, TaskError,
                      WorkerCrashedError)
from ._objects import ObjectLostError

RayError = AtlError
RayTaskError = TaskError
RayActorError = ActorDiedError

__all__ = ["RayError", "RayTaskError", "TaskError", "RayActorError", "ActorDiedError",
           "GetTimeoutError", "ObjectLostError", "OwnerDiedError", "TaskCancelledError",
           "RemoteError", "AtlError", "WorkerCrashedError"]
