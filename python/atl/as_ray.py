"""Runs a Ray program unchanged with atl in Ray's place:

    python -m atl.as_ray program.py [ARGS...]

`import ray`, `from ray.util... import ...`, `ray.exceptions`, `ray.actor`
then name atl's modules (what `import atl as ray` does by hand). What atl
lacks of Ray's API fails where the program uses it, naming it."""
import runpy
import sys

import importlib

# Ray's module -> atl's (by import: atl.util.placement_group is also the
# name of a function in atl.util, as ray.util's is).
ALIASES = {
    "ray": "atl",
    "ray.actor": "atl.actor",
    "ray.dag": "atl.dag",
    "ray.dag.class_node": "atl.dag.class_node",
    "ray.dag.dag_node": "atl.dag.dag_node",
    "ray.dag.function_node": "atl.dag.function_node",
    "ray.dag.input_node": "atl.dag.input_node",
    "ray.dag.output_node": "atl.dag.output_node",
    "ray.exceptions": "atl.exceptions",
    "ray.util": "atl.util",
    "ray.util.actor_pool": "atl.util.actor_pool",
    "ray.util.multiprocessing": "atl.util.multiprocessing",
    "ray.util.placement_group": "atl.util.placement_group",
    "ray.util.queue": "atl.util.queue",
    "ray.util.scheduling_strategies": "atl.util.scheduling_strategies",
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    modules = {ray: importlib.import_module(ours) for ray, ours in ALIASES.items()}
    for name in ALIASES:
        if name in sys.modules and sys.modules[name] is not modules[name]:
            print(f"atl.as_ray: {name} is imported already (Ray itself?): run the program "
                  f"with `python -m atl.as_ray`, before anything imports ray", file=sys.stderr)
            return 2
    sys.modules.update(modules)
    program = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(program, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
