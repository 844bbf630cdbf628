"""The options of atl.remote() and .options(), checked before anything runs:
each one atl honours is taken (Ray's spelling mapped onto atl's), each one it
does not is refused with a TypeError that names it and says what to do
instead, and a misspelt one is refused with the nearest name. Nothing is
accepted and ignored: an infeasible `num_cpus=64` that ran at once on a
2-CPU pod was worse than an error.

Pure: no cluster, no C library; tests/python/test_options.py covers every row."""
import difflib
import os

RAY_MODE = "run the program under `headnode --mode ray`, where Ray applies it"

# atl's own options, for tasks and actors alike.
_ATL = {
    "pod": "the worker pod to run on",
    "env": "extra environment variables (dict)",
    "working_dir": "the process's working directory",
    "placement_group": "a placement group to run in",
    "placement_group_bundle_index": "the bundle of that group",
}

# Ray's options atl takes only at their default (the behaviour atl has):
# name -> (default, why another value is refused).
_TASK_DEFAULTS = {}
_ACTOR_DEFAULTS = {
    "max_pending_calls": (-1, "calls here wait without a bound"),
}
# Resource counts atl reserves for a call (see `_demand`).
_DEMAND = ("num_cpus", "num_gpus", "memory", "resources")
# Ray's other knobs: not atl's.
_RESOURCES = ("object_store_memory", "accelerator_type", "label_selector",
              "_metadata", "enable_task_events", "allow_out_of_order_execution")
_RESOURCES_WHY = ("atl reserves CPU, GPU, memory and custom resources (num_cpus, num_gpus, "
                  "memory, resources) or a placement group; for this, " + RAY_MODE)


# An actor's calls at once (max_concurrency): each a thread in its process
# (an async actor's wait there for its event loop); Ray's default for an
# async actor is 1000.
MAX_CONCURRENCY = 1000


def _amount(what, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
            or value == float("inf"):
        raise TypeError(f"{what}: {name}={value!r}: expected a number >= 0")
    return value


def _demand(what, name, value, out):
    """num_cpus/num_gpus/memory/resources as one bundle: {"CPU": n, "GPU": g,
    "memory": bytes, custom: n}, reserved on a pod for the call (waits until
    one can hold it)."""
    demand = dict(out.get("demand") or {})
    if name == "resources":
        if value is None:
            return
        if not isinstance(value, dict):
            raise TypeError(f"{what}: resources must be a dict of name -> amount")
        for key, amount in value.items():
            if key in ("CPU", "GPU", "memory"):
                raise TypeError(f"{what}: resources[{key!r}]: use num_cpus, num_gpus or "
                                f"memory for it (as Ray says)")
            if not isinstance(key, str) or not key:
                raise TypeError(f"{what}: resources: {key!r} is not a resource name")
            demand[key] = _amount(what, f"resources[{key!r}]", amount)
    elif value is not None:
        key = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}[name]
        demand[key] = _amount(what, name, value)
    demand = {k: v for k, v in demand.items() if v}
    if demand:
        out["demand"] = demand
    else:
        out.pop("demand", None)


BACKPRESSURE = "_generator_backpressure_num_objects"


def backpressure(what, value):
    """Ray's _generator_backpressure_num_objects: a streaming generator
    pauses once this many of its items wait unconsumed by the caller (its
    `next`), and goes on as the caller takes them (or drops the generator).
    -1 or None: no bound (the default). 0 is refused with Ray's ValueError.
    The bound, or None."""
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise TypeError(f"{what}: {BACKPRESSURE}={value!r}: expected a whole number >= 1, "
                        f"or -1 (no bound)")
    if value == 0:
        raise ValueError(f"{what}: {BACKPRESSURE}=0 is not allowed: give a whole number >= 1 "
                         f"(items unconsumed before the generator pauses), or -1 (no bound)")
    return value


def _retries(what, name, value, out):
    """max_retries: reruns after the worker died (-1: no end); retry_exceptions:
    also after it raised (True, or a list of exception classes)."""
    if name == "max_retries":
        if isinstance(value, bool) or not isinstance(value, int) or value < -1:
            raise TypeError(f"{what}: max_retries={value!r}: expected a whole number >= -1 "
                            f"(-1: retry without end)")
        if value:
            out["max_retries"] = value
        return
    if isinstance(value, bool):
        if value:
            out["retry_exceptions"] = True
    elif isinstance(value, (list, tuple)) and value and all(
            isinstance(c, type) and issubclass(c, BaseException) for c in value):
        out["retry_exceptions"] = tuple(value)
    else:
        raise TypeError(f"{what}: retry_exceptions={value!r}: expected True, False or a list "
                        f"of exception classes")


def _refuse(what, name, why):
    return TypeError(f"{what}: option {name!r} is not supported: {why}")


def _module_dir(what, module):
    """The directory to put on a process's Python path so that `module` (a
    module object, or a local package directory or .py file, as Ray's
    py_modules takes them) imports there under its own name."""
    if isinstance(module, str):
        if "://" in module or module.endswith((".whl", ".zip")):
            raise _refuse(what, f"runtime_env['py_modules']: {module!r}",
                          "atl takes local directories and .py files (the pods share the "
                          "job's files); " + RAY_MODE)
        path = os.path.abspath(module.rstrip("/") or module)
        if not os.path.exists(path):
            raise ValueError(f"{what}: runtime_env['py_modules']: {module!r} does not exist "
                             f"(give a package directory, a .py file, or a module)")
        return os.path.dirname(path)
    file = getattr(module, "__file__", None)
    if not file:
        raise TypeError(f"{what}: runtime_env['py_modules']: {module!r} is neither a path nor a "
                        f"module loaded from a file")
    if getattr(module, "__path__", None):  # a package: its directory's parent
        return os.path.dirname(os.path.dirname(os.path.abspath(file)))
    return os.path.dirname(os.path.abspath(file))


def runtime_env_of(what, value, out):
    """runtime_env={'env_vars': {...}, 'working_dir': '...', 'py_modules':
    [...]}: atl's env, working_dir and the directories put on the process's
    Python path; any other key (pip, conda...) is Ray's to apply."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise TypeError(f"{what}: runtime_env must be a dict, not {type(value).__name__}")
    for key, v in value.items():
        if key == "env_vars":
            if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, str)
                                                  for k, x in v.items()):
                raise TypeError(f"{what}: runtime_env['env_vars'] must map names to strings")
            env = dict(out.get("env") or {})
            env.update(v)
            out["env"] = env
        elif key == "working_dir":
            if not isinstance(v, str) or not v:
                raise TypeError(f"{what}: runtime_env['working_dir'] must be a path")
            # Ray's "." is the driver's directory (uploaded there; the same
            # path on every pod here, which share the image and the job's dir).
            out.setdefault("working_dir", os.path.abspath(v))
        elif key == "py_modules":
            if not isinstance(v, (list, tuple)):
                raise TypeError(f"{what}: runtime_env['py_modules'] must be a list of modules "
                                f"or paths")
            dirs = [_module_dir(what, m) for m in v]
            if dirs:
                out["py_modules"] = list(dict.fromkeys(list(out.get("py_modules") or []) + dirs))
        else:
            raise _refuse(what, f"runtime_env[{key!r}]", "atl takes only env_vars, working_dir "
                          "and py_modules (the image has the packages); " + RAY_MODE)


def _strategy(what, value, out):
    """scheduling_strategy: "DEFAULT" (or None) as atl does anyway; "SPREAD":
    each call on the next worker pod in turn; a PlacementGroupSchedulingStrategy:
    that group's bundle (index -1: its bundles in turn)."""
    from .util.scheduling_strategies import (NodeAffinitySchedulingStrategy,
                                             PlacementGroupSchedulingStrategy)
    if value is None or value == "DEFAULT":
        return
    if isinstance(value, NodeAffinitySchedulingStrategy):
        out["pod"] = value.node_id
        return
    if value == "SPREAD":
        out["spread"] = True
        return
    if isinstance(value, PlacementGroupSchedulingStrategy):
        out["placement_group"] = value.placement_group
        index = value.placement_group_bundle_index
        out["placement_group_bundle_index"] = None if index == -1 else index
        if value.placement_group_capture_child_tasks:
            out["capture"] = True
        return
    raise _refuse(what, f"scheduling_strategy={value!r}", "atl takes \"DEFAULT\", \"SPREAD\", "
                  "and atl.util.scheduling_strategies' PlacementGroupSchedulingStrategy and "
                  "NodeAffinitySchedulingStrategy; " + RAY_MODE)


def check(options, what, actor):
    """`options` checked for a remote function (actor=False) or an actor
    class: the options atl acts on, Ray's spellings mapped (runtime_env onto
    env and working_dir), defaults dropped. TypeError for anything else."""
    own = dict(_ATL)
    if actor:
        own["name"] = "the actor's name (atl.get_actor)"
        own["start_timeout"] = "seconds to wait for its constructor (default 60)"
    else:
        own["name"] = "the task's name in errors and logs"
    defaults = _ACTOR_DEFAULTS if actor else _TASK_DEFAULTS
    out = {}
    for name, value in options.items():
        if name in own:
            if value is not None:
                out[name] = value
        elif name == "runtime_env":
            runtime_env_of(what, value, out)
        elif name == "scheduling_strategy":
            _strategy(what, value, out)
        elif name == "placement_group_capture_child_tasks":
            # (the group's own processes' tasks and actors go to it too)
            if value:
                out["capture"] = True
        elif name == "num_returns" and not actor:
            # As Ray's: the task returns a sequence of that many values, one
            # ObjectRef each; "streaming" (a generator's default): an
            # ObjectRefGenerator; "dynamic": a ref of one.
            if value in ("streaming", "dynamic"):
                out["num_returns"] = value
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10000:
                raise TypeError(f"{what}: num_returns={value!r}: expected a whole number from 1 "
                                f"to 10000 (the task returns that many values)")
            if value != 1:
                out["num_returns"] = value
        elif name == BACKPRESSURE and not actor:
            bound = backpressure(what, value)
            if bound:
                out["backpressure"] = bound
        elif name in _DEMAND:
            _demand(what, name, value, out)
        elif name in ("max_retries", "retry_exceptions") and not actor:
            _retries(what, name, value, out)
        elif name == "max_calls" and not actor:
            # Ray's: a process runs at most this many of the function's
            # calls (0: no bound), so what a call leaves behind (GPU memory,
            # module state) goes with its process. Any bound: a process of
            # its own for each call here.
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                # (as Ray's: a wrong type a TypeError, a negative count a ValueError)
                raise (TypeError if not isinstance(value, int) or isinstance(value, bool)
                       else ValueError)(f"{what}: max_calls={value!r}: expected a whole number "
                                        f">= 0 (calls a process runs before it exits; 0: no "
                                        f"bound)")
            if value > 0:
                out["max_calls"] = value
        elif name == "max_concurrency" and actor:
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not 1 <= value <= MAX_CONCURRENCY:
                raise TypeError(f"{what}: max_concurrency={value!r}: expected a whole number "
                                f"from 1 to {MAX_CONCURRENCY} (calls at once, each on a thread)")
            if value > 1:
                out["max_concurrency"] = value
        elif name == "concurrency_groups" and actor:
            # Ray's: name -> calls at once, each group's beside the default
            # group's (max_concurrency); a method is put in one with
            # @method(concurrency_group=), a call with .options(...).
            if value is None:
                continue
            if not isinstance(value, dict) or any(
                    not isinstance(k, str) or not k or isinstance(n, bool) or
                    not isinstance(n, int) or not 1 <= n <= MAX_CONCURRENCY
                    for k, n in value.items()):
                raise TypeError(f"{what}: concurrency_groups={value!r}: expected a dict of "
                                f"group name -> calls at once (1 to {MAX_CONCURRENCY})")
            if value:
                out["concurrency_groups"] = dict(value)
        elif name in ("max_restarts", "max_task_retries") and actor:
            if isinstance(value, bool) or not isinstance(value, int) or value < -1:
                raise TypeError(f"{what}: {name}={value!r}: expected a whole number >= 0, or -1 "
                                f"(without a limit)")
            if value != 0:
                out[name] = value
        elif name == "lifetime" and actor:
            if value not in (None, "detached", "non_detached"):
                raise TypeError(f"{what}: lifetime={value!r}: expected None, \"detached\" or "
                                f"\"non_detached\"")
            if value == "detached":
                out["detached"] = True
        elif name == "namespace" and actor:
            if value is not None:
                out["namespace"] = check_namespace(what, value)
        elif name == "get_if_exists" and actor:
            if not isinstance(value, bool):
                raise TypeError(f"{what}: get_if_exists={value!r}: expected True or False")
            if value:
                out["get_if_exists"] = True
        elif name in defaults:
            default, why = defaults[name]
            if value is not None and value != default:
                raise _refuse(what, f"{name}={value!r}", why)
        elif name in _RESOURCES:
            raise _refuse(what, name, _RESOURCES_WHY)
        else:
            known = sorted(set(own) | set(defaults) | set(_RESOURCES) | set(_DEMAND) |
                           {"runtime_env", "scheduling_strategy",
                            "placement_group_capture_child_tasks"} |
                           ({"max_concurrency", "lifetime", "get_if_exists", "namespace",
                             "max_restarts", "max_task_retries", "concurrency_groups"}
                            if actor else set()) |
                           (set() if actor else {"num_returns", "max_retries", "max_calls",
                                                 "retry_exceptions", BACKPRESSURE}))
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"{what}: unknown option {name!r}{hint}; atl's are "
                            f"{', '.join(sorted(own))}")
    if isinstance(out.get("working_dir"), str):
        out["working_dir"] = os.path.abspath(out["working_dir"])  # (relative: the caller's)
    if "env" in out and not isinstance(out["env"], dict):
        raise TypeError(f"{what}: env must be a dict, not {type(out['env']).__name__}")
    if out.get("demand") and (out.get("pod") or out.get("spread")):
        raise TypeError(f"{what}: num_cpus/num_gpus/memory/resources reserve a place on a pod "
                        f"atl chooses; with pod= or \"SPREAD\" give a placement group instead")
    return out


def check_namespace(what, value):
    """A namespace (Ray's): named actors are found by name within one. A
    non-empty string of printable characters without spaces or "::"."""
    if not isinstance(value, str) or not value or "::" in value or \
            any(not 0x21 <= ord(c) <= 0x7e for c in value):
        raise TypeError(f"{what}: namespace={value!r}: expected a non-empty name of printable "
                        f"characters, no spaces or '::'")
    return value


def merge(options, more, what, actor):
    """`options` (checked) with `more` checked and laid over them: .options()."""
    merged = dict(options)
    if "scheduling_strategy" in more:
        merged.pop("capture", None)  # (the strategy given now says whether it captures)
    merged.update(check(more, what, actor))
    if BACKPRESSURE in more and not backpressure(what, more[BACKPRESSURE]):
        merged.pop("backpressure", None)  # -1 (or None): the bound set before lifted
    return merged
