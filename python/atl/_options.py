"""The options of atl.remote() and .options(), checked before anything runs:
each one atl honours is taken (Ray's spelling mapped onto atl's), each one it
does not is refused with a TypeError that names it and says what to do
instead, and a misspelt one is refused with the nearest name. Nothing is
accepted and ignored: an infeasible `num_cpus=64` that ran at once on a
2-CPU pod was worse than an error.

Pure: no cluster, no C library; tests/python/test_options.py covers every row."""
import difflib

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
_TASK_DEFAULTS = {
    "max_retries": (0, "atl runs a task once (a task whose pod was lost fails): retry in "
                       "the driver, or " + RAY_MODE),
    "retry_exceptions": (False, "atl does not rerun a task that raised: retry in the driver"),
    "max_calls": (0, "atl's warm processes are reused without a call limit"),
}
_ACTOR_DEFAULTS = {
    "max_restarts": (0, "an actor whose process ends is gone here (ActorDiedError): make a "
                        "new one, or " + RAY_MODE),
    "max_task_retries": (0, "a call to a dead actor is not retried here"),
    "max_concurrency": (1, "an actor here runs one call at a time"),
    "lifetime": (None, "an actor here lives as long as its driver"),
    "namespace": (None, "atl's actor names are per job, with no namespaces"),
    "get_if_exists": (False, "use atl.get_actor(name) first"),
    "max_pending_calls": (-1, "calls here wait without a bound"),
}
# Ray's placement by resource counts and strategies: not atl's (yet).
_RESOURCES = ("num_cpus", "num_gpus", "resources", "memory", "object_store_memory",
              "accelerator_type", "label_selector",
              "placement_group_capture_child_tasks", "concurrency_groups",
              "_metadata", "enable_task_events", "allow_out_of_order_execution")
_RESOURCES_WHY = ("atl places work by placement group or pod, not by resource counts: "
                  "reserve with atl.placement_group([{'CPU': n, 'GPU': g}]) and pass "
                  "placement_group=, or " + RAY_MODE)


def _refuse(what, name, why):
    return TypeError(f"{what}: option {name!r} is not supported: {why}")


def _runtime_env(what, value, out):
    """runtime_env={'env_vars': {...}, 'working_dir': '...'}: atl's env and
    working_dir; any other key (pip, conda, py_modules...) is Ray's to apply."""
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
            out.setdefault("working_dir", v)
        else:
            raise _refuse(what, f"runtime_env[{key!r}]", "atl takes only env_vars and "
                          "working_dir (the image has the packages); " + RAY_MODE)


def _strategy(what, value, out):
    """scheduling_strategy: "DEFAULT" (or None) as atl does anyway; "SPREAD":
    each call on the next worker pod in turn; a PlacementGroupSchedulingStrategy:
    that group's bundle (index -1: its bundles in turn)."""
    from .util.scheduling_strategies import PlacementGroupSchedulingStrategy
    if value is None or value == "DEFAULT":
        return
    if value == "SPREAD":
        out["spread"] = True
        return
    if isinstance(value, PlacementGroupSchedulingStrategy):
        out["placement_group"] = value.placement_group
        index = value.placement_group_bundle_index
        out["placement_group_bundle_index"] = None if index == -1 else index
        return
    raise _refuse(what, f"scheduling_strategy={value!r}", "atl takes \"DEFAULT\", \"SPREAD\" "
                  "and atl.util.scheduling_strategies.PlacementGroupSchedulingStrategy; "
                  + RAY_MODE)


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
            _runtime_env(what, value, out)
        elif name == "scheduling_strategy":
            _strategy(what, value, out)
        elif name == "num_returns" and not actor:
            # As Ray's: the task returns a sequence of that many values, one
            # ObjectRef each.
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10000:
                raise TypeError(f"{what}: num_returns={value!r}: expected a whole number from 1 "
                                f"to 10000 (the task returns that many values)")
            if value != 1:
                out["num_returns"] = value
        elif name in defaults:
            default, why = defaults[name]
            if value is not None and value != default:
                raise _refuse(what, f"{name}={value!r}", why)
        elif name in _RESOURCES:
            raise _refuse(what, name, _RESOURCES_WHY)
        else:
            known = sorted(set(own) | set(defaults) | set(_RESOURCES) |
                           {"runtime_env"} | (set() if actor else {"num_returns"}))
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"{what}: unknown option {name!r}{hint}; atl's are "
                            f"{', '.join(sorted(own))}")
    if "env" in out and not isinstance(out["env"], dict):
        raise TypeError(f"{what}: env must be a dict, not {type(out['env']).__name__}")
    return out
