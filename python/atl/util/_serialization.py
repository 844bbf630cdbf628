"""Ray's serialization helpers in `ray.util`: custom serializers for a type
(register_serializer) and a search for what in an object cannot be sent
(inspect_serializability)."""
from __future__ import annotations

import copyreg
import inspect
import sys

from .. import _objects

__all__ = ["register_serializer", "deregister_serializer", "inspect_serializability"]


def register_serializer(cls, *, serializer, deserializer):
    """Values of type `cls` this process sends travel as serializer(value),
    made again as deserializer(that) where they are received, as Ray's (the
    registration is this process's own)."""
    if not isinstance(cls, type):
        raise TypeError(f"register_serializer: {cls!r} is not a class")
    if not callable(serializer) or not callable(deserializer):
        raise TypeError("register_serializer: serializer and deserializer must be callables")
    copyreg.pickle(cls, lambda value: (deserializer, (serializer(value),)))


def deregister_serializer(cls):
    copyreg.dispatch_table.pop(cls, None)


class FailureTuple:
    """What could not be sent: the object, the path of names to it from the
    object inspected, and the object that holds it."""

    def __init__(self, obj, path, parent):
        self.obj, self.path, self.parent = obj, tuple(path), parent

    def __repr__(self):
        return (f"FailTuple({self.path[-1]} [path={'.'.join(self.path)}, obj={self.obj!r}, "
                f"parent={self.parent!r}])")


def _sends(obj):
    try:
        _objects.dumps(obj)
        return True, None
    except Exception as e:
        return False, e


def _members(obj):
    """(name, value) of what `obj` holds: a function's globals and closure
    cells it uses, an object's attributes, a container's items."""
    if inspect.isfunction(obj):
        names = obj.__code__.co_names
        out = [(n, obj.__globals__[n]) for n in names if n in obj.__globals__ and
               not inspect.ismodule(obj.__globals__[n])]
        cells = obj.__closure__ or ()
        out += [(n, c.cell_contents) for n, c in zip(obj.__code__.co_freevars, cells)]
        return out
    if isinstance(obj, dict):
        return [(repr(k), v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    return list(getattr(obj, "__dict__", {}).items())


def inspect_serializability(base_obj, name=None, depth=3, print_file=None):
    """(whether `base_obj` can be sent, the set of its parts that cannot),
    as Ray's: each part that fails is looked into, `depth` levels down, and
    what fails at the bottom is printed with its path."""
    out = print_file or sys.stdout
    name = name or getattr(base_obj, "__name__", None) or type(base_obj).__name__
    failures = set()

    def look(obj, path, parent, level):
        ok, error = _sends(obj)
        if ok:
            return True
        print(f"{'    ' * (depth - level)}!!! FAIL serialization: {error}", file=out)
        found = False
        if level > 0:
            for member, value in _members(obj):
                if not _sends(value)[0]:
                    found = True
                    look(value, path + (member,), obj, level - 1)
        if not found:
            failures.add(FailureTuple(obj, path, parent))
        return False

    print("=" * 76 + f"\nChecking Serializability of {base_obj!r}\n" + "=" * 76, file=out)
    ok = look(base_obj, (name,), None, depth)
    if not ok:
        for f in failures:
            print(f"Variable: \n\n\t{f!r}\n\nwas found to be non-serializable.", file=out)
    return ok, failures
