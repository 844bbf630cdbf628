"""The errors a remote call raises in its caller, with their types kept."""
import pickle

from ._capi import AtlError


class RemoteError(AtlError):
    """A remote function raised (or its process ended without a result)."""

    def __init__(self, message, remote_type=None, remote_traceback=None):
        super().__init__(1, message)
        self.remote_type = remote_type
        self.remote_traceback = remote_traceback


class TaskError(RemoteError):
    """A task's or an actor call's exception, raised in the caller. When the
    original exception came back, the error raised is an instance of both
    this and the original class (Ray's RayTaskError(ValueError) pattern): so
    `except ValueError` catches a remote ValueError; `.cause` is the original
    and `.remote_traceback` its traceback on the pod."""

    def __init__(self, message, remote_type=None, remote_traceback=None, cause=None):
        super().__init__(message, remote_type, remote_traceback)
        self.cause = cause

    def as_instanceof_cause(self):
        """Ray's RayTaskError.as_instanceof_cause(): this error, already an
        instance of the original's class when that came back."""
        return self


_typed_errors = {}  # original class -> its TaskError subclass


def task_error(message, outcome):
    """The error for an ("err", type, traceback[, pickled exception]) outcome:
    of the exception's own class too when it came back and such a class can
    be made; else a plain TaskError."""
    remote_type, tb = outcome[1], outcome[2]
    cause = None
    if len(outcome) > 3 and outcome[3] is not None:
        try:
            cls, args, attributes = pickle.loads(outcome[3])
            cause = cls.__new__(cls)  # as it was, without calling its __init__ again
            cause.args = args
            cause.__dict__.update(attributes)
        except Exception:  # its class is not importable here, or takes no such state
            cause = None
    if not isinstance(cause, Exception):
        return TaskError(message, remote_type, tb)
    cls = type(cause)
    try:
        typed = _typed_errors.get(cls)
        if typed is None:
            typed = type(f"TaskError({cls.__name__})", (TaskError, cls),
                         {"__init__": lambda self, *a, **k: None})
            typed.__module__ = "atl"
            _typed_errors[cls] = typed
        err = typed.__new__(typed)
        # Not TaskError.__init__: its super() chain would reach the original
        # class's __init__, whose arguments are not a message.
        BaseException.__init__(err, message)
        err.code, err.remote_type, err.remote_traceback, err.cause = 1, remote_type, tb, cause
        err.__dict__.update(getattr(cause, "__dict__", {}))  # its own attributes win
        return err
    except TypeError:  # a class no subclass can join (its layout, a final class)
        err = TaskError(message, remote_type, tb, cause)
        return err


class TaskCancelledError(TaskError):
    """A call atl.cancel stopped, read with atl.get: as Ray's (a TaskError
    too: Ray's docs catch a cancelled async actor call as RayTaskError)."""


class WorkerCrashedError(RemoteError):
    """The process running a call ended without its result (it exited,
    crashed, or was killed), as Ray's WorkerCrashedError; max_retries runs
    the call again."""


class ActorDiedError(RemoteError):
    """The actor's process ended (killed, or its pod was lost): a call to it
    fails with this, as Ray's ActorDiedError."""


class OwnerDiedError(RemoteError):
    """An object's owner (the process that put it or called the task that
    made it) ended, or the object was freed, before it was read: as Ray's."""


# The exception itself goes back with its traceback when it pickles this small.
_MAX_EXCEPTION = 64 * 1024


def error_outcome(e, text=None):
    """("err", type name, traceback, the exception pickled or None): the
    caller raises it as its own type (TaskError and the original class).
    cloudpickle (atl._cloud: the image's or atl's own) where it serves (a class defined in the driver's
    __main__ travels by value), else pickle; an exception that does not
    pickle goes as its name and traceback only."""
    import traceback
    pickled = None
    try:
        from . import _cloud
        dumper = _cloud.cloudpickle() or pickle
        # Its class, args and attributes, not the instance: unpickling an
        # instance calls its __init__ with its args, which fails for a class
        # whose __init__ takes other arguments than it passes to Exception.
        pickled = dumper.dumps((type(e), e.args, dict(getattr(e, "__dict__", {}))))
        if len(pickled) > _MAX_EXCEPTION:
            pickled = None
    except Exception:
        pickled = None
    return ("err", type(e).__name__, text if text is not None else traceback.format_exc(), pickled)
