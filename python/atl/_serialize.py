"""Functions by value, for running on a worker that cannot import the
driver's script: the code object (marshal: head and workers share one image,
so one Python), the globals it names (modules by name, values pickled, other
functions of the script by value too), defaults and closure. Functions of
importable modules travel by reference, as pickle does.

cloudpickle does all this and more (a class defined inside a function, say):
where it serves (atl._cloud: the image's, else the copy atl ships), functions
and classes go through it; this module's own encoding is the fallback for a
Python neither serves."""
import builtins
import marshal
import pickle
import sys
import types

from . import _cloud

_MAX_DEPTH = 32


def _global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _importable(f):
    module = getattr(f, "__module__", None)
    if not module or module == "__main__" or module not in sys.modules:
        return False
    if "<locals>" in getattr(f, "__qualname__", ""):
        return False
    try:
        pickle.dumps(f)
        return True
    except Exception:
        return False


def _encode(value, root, depth):
    if value is root:
        return ("self",)
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, types.FunctionType) and not _importable(value):
        return ("function", encode_function(value, depth + 1))
    remote_fn = getattr(value, "_atl_remote_function", None)
    if remote_fn is not None:  # an @atl.remote function a remote function calls
        return ("remote", encode_function(remote_fn, depth + 1), _encode(value._options, None,
                                                                         depth + 1))
    try:
        return ("value", pickle.dumps(value))
    except Exception as e:
        raise TypeError(f"atl.remote: cannot send {value!r} to a worker ({e}); define it in an "
                        "importable module or pass it as an argument") from None


def _has_cloudpickle():
    return _cloud.cloudpickle() is not None


def encode_function(f, depth=0):
    """A picklable description of `f` (see the module's docstring)."""
    if depth == 0 and _has_cloudpickle():
        return _by_cloudpickle(f, "function")
    if depth > _MAX_DEPTH:
        raise TypeError("atl.remote: functions nest too deeply to send")
    if _importable(f):
        return ("ref", pickle.dumps(f))
    code = f.__code__
    globs = {}
    for name in sorted(_global_names(code)):
        if name in f.__globals__:
            globs[name] = _encode(f.__globals__[name], f, depth)
    closure = None
    if f.__closure__:
        closure = tuple(_encode(c.cell_contents, f, depth) for c in f.__closure__)
    defaults = pickle.dumps(f.__defaults__)
    kwdefaults = pickle.dumps(f.__kwdefaults__)
    return ("code", marshal.dumps(code), f.__name__, globs, defaults, kwdefaults, closure)


def _decode(spec, fn):
    kind = spec[0]
    if kind == "self":
        return fn
    if kind == "module":
        return __import__(spec[1], fromlist=["_"])
    if kind == "function":
        return decode_function(spec[1])
    if kind == "remote":
        import atl
        # Its options were checked where it was made.
        return atl.RemoteFunction(decode_function(spec[1]), _decode(spec[2], None), checked=True)
    return pickle.loads(spec[1])


def _by_cloudpickle(obj, what):
    try:
        return ("cloudpickle", _cloud.cloudpickle().dumps(obj))
    except Exception as e:
        raise TypeError(f"atl.remote: cannot send {what} {getattr(obj, '__name__', obj)!r} to a "
                        f"worker ({e}); define it in an importable module or pass what it "
                        "uses as an argument") from None


def decode_function(desc):
    """The function `encode_function` described."""
    if desc[0] in ("ref", "cloudpickle"):
        return pickle.loads(desc[1])
    _, code, name, globs, defaults, kwdefaults, closure = desc
    namespace = {"__builtins__": builtins, "__name__": "__atl_remote__"}
    cells = None
    if closure is not None:
        cells = tuple(types.CellType() for _ in closure)
    fn = types.FunctionType(marshal.loads(code), namespace, name, pickle.loads(defaults), cells)
    fn.__kwdefaults__ = pickle.loads(kwdefaults)
    for key, spec in globs.items():
        namespace[key] = _decode(spec, fn)
    if closure is not None:
        for cell, spec in zip(cells, closure):
            cell.cell_contents = _decode(spec, fn)
    return fn


def encode_class(cls):
    """A class by value (its methods as functions by value), or by reference
    when it is importable."""
    if _has_cloudpickle():
        return _by_cloudpickle(cls, "class")
    if _importable(cls):
        return ("ref", pickle.dumps(cls))
    attrs = {}
    for key, value in cls.__dict__.items():
        if key in ("__dict__", "__weakref__", "__module__", "__qualname__"):
            continue
        if isinstance(value, types.FunctionType):
            attrs[key] = ("function", encode_function(value))
        elif isinstance(value, (staticmethod, classmethod)):
            attrs[key] = (type(value).__name__, encode_function(value.__func__))
        else:
            attrs[key] = _encode(value, None, 0)
    for base in cls.__bases__:
        if base is not object and not _importable(base):
            raise TypeError(f"atl.remote: base class {base.__name__} of {cls.__name__} must be "
                            "importable on the workers")
    return ("class", cls.__name__, pickle.dumps(cls.__bases__), attrs)


def decode_class(desc):
    if desc[0] in ("ref", "cloudpickle"):
        return pickle.loads(desc[1])
    _, name, bases, attrs = desc
    namespace = {}
    for key, spec in attrs.items():
        if spec[0] == "staticmethod":
            namespace[key] = staticmethod(decode_function(spec[1]))
        elif spec[0] == "classmethod":
            namespace[key] = classmethod(decode_function(spec[1]))
        else:
            namespace[key] = _decode(spec, None)
    return type(name, pickle.loads(bases), namespace)
