"""A task's exception comes back as its own type (atl.TaskError and the
original class, Ray's RayTaskError(ValueError) pattern), built from what a
worker sends: its class, args and attributes (atl._errors.error_outcome). Pure: the
worker's half and the caller's half without a cluster (test_api.py has them
end to end)."""
import pickle

import pytest

import atl
from atl import _errors


class Quota(Exception):
    def __init__(self, used, limit):
        super().__init__(f"{used} of {limit}")
        self.used, self.limit = used, limit


class Final(Exception):
    """No subclass of it can be made."""

    def __init_subclass__(cls, **kwargs):
        raise TypeError("Final is final")


def roundtrip(e):
    """What the caller raises for `e` raised on a pod."""
    try:
        raise e
    except BaseException as raised:
        outcome = pickle.loads(pickle.dumps(_errors.error_outcome(raised)))
    return atl._errors.task_error(f"f raised {outcome[1]}:\n{outcome[2]}", outcome)


def test_a_builtin_exception_is_caught_by_its_type_and_as_atls():
    err = roundtrip(ValueError("bad"))
    assert isinstance(err, ValueError) and isinstance(err, atl.TaskError)
    assert isinstance(err, atl.RemoteError) and isinstance(err, atl.AtlError)
    assert err.remote_type == "ValueError" and "raise e" in err.remote_traceback
    assert str(err).startswith("f raised ValueError:")
    assert err.cause.args == ("bad",) and type(err.cause) is ValueError
    with pytest.raises(KeyError):
        raise roundtrip(KeyError("k"))
    # One subclass per original class, reused.
    assert type(roundtrip(ValueError("again"))) is type(err)


def test_a_users_exception_keeps_its_attributes_though_its_init_takes_other_arguments():
    err = roundtrip(Quota(7, 5))
    assert isinstance(err, Quota)
    assert (err.used, err.limit) == (7, 5)
    assert type(err).__name__ == "TaskError(Quota)"


def test_what_cannot_come_back_typed_is_a_plain_task_error():
    # A class no subclass can join: a TaskError holding it as the cause.
    err = roundtrip(Final("x"))
    assert type(err) is atl.TaskError and err.remote_type == "Final"
    assert type(err.cause) is Final
    # An exception whose attributes do not pickle: its name and traceback only.
    e = ValueError("with a lock")
    e.lock = __import__("threading").Lock()
    err = roundtrip(e)
    assert type(err) is atl.TaskError and err.cause is None
    assert "with a lock" in err.remote_traceback
    # An older worker's outcome (three fields).
    err = atl._errors.task_error("f raised X:\ntb", ("err", "X", "tb"))
    assert type(err) is atl.TaskError and err.remote_traceback == "tb"
    # A class the caller cannot import.
    outcome = ("err", "Gone", "tb", pickle.dumps(("no such pickle",)))
    assert type(atl._errors.task_error("m", outcome)) is atl.TaskError
