# atl's flight-recorder hook (libs/runtime/os/include/atl/os/flight_recorder.hpp).
# A workernode writes this file into a rank's own directory and puts that
# directory first on the rank's PYTHONPATH. In every Python process of the
# rank it starts one daemon thread that waits on <dir>/<pid>.fifo; a byte
# written there makes it dump torch's flight recorder to <dir>/<pid>.json.
# Then it runs the interpreter's own sitecustomize, which this file shadows.
# Python 2 syntax too, and never a word on the rank's output. Cheap at start
# (a rank's every Python process pays it): no json, re or threading imported
# until a dump is asked for.
import os as _atl_os
import sys as _atl_sys


def _atl_flight_recorder():
    here = _atl_os.path.dirname(_atl_os.path.abspath(__file__))
    wanted = _atl_os.environ.get("ATL_FLIGHT_RECORDER_DIR", "")
    if not wanted or _atl_os.path.abspath(wanted) != here:
        return
    _atl_older_torch_name()
    pid = _atl_os.getpid()
    fifo = _atl_os.path.join(here, "%d.fifo" % pid)
    try:
        if _atl_os.path.lexists(fifo):
            _atl_os.unlink(fifo)  # a pid reused within the attempt
        _atl_os.mkfifo(fifo, 0o600)
    except OSError:
        return

    def dump():
        import json

        # torch's JSON as it comes, never parsed here: what the rank spends
        # on a look must stay far below what the hang watch calls working
        # (1 % of a core over 3 s).
        torch = _atl_sys.modules.get("torch")
        dumps, errors = [], []
        if torch is not None:
            c10d = _atl_sys.modules.get("torch._C._distributed_c10d")
            if c10d is None:
                c10d = getattr(getattr(torch, "_C", None), "_distributed_c10d", None)
            for name in ("_dump_fr_trace_json", "_dump_nccl_trace_json"):
                f = getattr(c10d, name, None)
                if f is None:
                    continue
                try:
                    text = f()
                    if isinstance(text, bytes):
                        text = text.decode("utf-8", "replace")
                    dumps.append('{"source": %s, "trace": %s}' % (json.dumps(name), text))
                except Exception as e:  # a torch without that recorder built in
                    words = str(e).splitlines()[0] if str(e) else type(e).__name__
                    errors.append(json.dumps("%s: %s" % (name, words)))
        version = None if torch is None else str(getattr(torch, "__version__", ""))
        path = _atl_os.path.join(here, "%d.json" % pid)
        with open(path + ".tmp", "w") as f:
            f.write('{"pid": %d, "torch": %s, "dumps": [%s], "errors": [%s]}' % (
                pid, json.dumps(version), ", ".join(dumps), ", ".join(errors)))
        _atl_os.rename(path + ".tmp", path)

    def serve():
        while True:
            try:
                with open(fifo, "rb") as f:  # blocks until atl opens it to write
                    asked = f.read(64)
            except (IOError, OSError):
                return
            if not asked:
                continue
            try:
                dump()
            except Exception:
                pass

    def forget():
        if _atl_os.getpid() == pid:
            try:
                _atl_os.unlink(fifo)
            except OSError:
                pass

    import atexit

    atexit.register(forget)
    try:
        import _thread
    except ImportError:  # Python 2
        import thread as _thread
    _thread.start_new_thread(serve, ())


def _atl_older_torch_name():
    # torch before 2.7 reads TORCH_NCCL_TRACE_BUFFER_SIZE only; 2.7 and later
    # read TORCH_FR_BUFFER_SIZE and warn, at every dump, of the older name.
    # The version from torch/version.py, without importing torch.
    env = _atl_os.environ
    if "TORCH_FR_BUFFER_SIZE" not in env or "TORCH_NCCL_TRACE_BUFFER_SIZE" in env:
        return
    try:
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec("torch", _atl_sys.path)
        if spec is None or not spec.submodule_search_locations:
            return
        for folder in spec.submodule_search_locations:
            path = _atl_os.path.join(folder, "version.py")
            if not _atl_os.path.exists(path):
                continue
            with open(path) as f:
                for line in f:
                    if line.startswith("__version__"):
                        words = line.split("=", 1)[1].strip().strip("'\"").split(".")
                        if (int(words[0]), int(words[1])) < (2, 7):
                            env["TORCH_NCCL_TRACE_BUFFER_SIZE"] = env["TORCH_FR_BUFFER_SIZE"]
                        return
            return
    except Exception:
        return


def _atl_chain():
    # The sitecustomize this one shadows (Debian's, a virtualenv's, the user's).
    here = _atl_os.path.dirname(_atl_os.path.abspath(__file__))
    rest = [p for p in _atl_sys.path if _atl_os.path.abspath(p or ".") != here]
    try:
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        # A module for it without importlib.util (which imports contextlib
        # and collections: milliseconds in every Python process of a rank).
        module = type(_atl_sys)(spec.name)
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
        spec.loader.exec_module(module)
    except ImportError:  # Python 2: no importlib.machinery
        import imp

        try:
            found = imp.find_module("sitecustomize", rest)
        except ImportError:
            return
        imp.load_module("_atl_chained_sitecustomize", *found)


try:
    _atl_flight_recorder()
except Exception:
    pass
_atl_chain()
