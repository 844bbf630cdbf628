"""Programs written as a Ray user writes them, run under `import ray` (Ray
2.60, a local cluster of 4 CPUs) or `import atl as ray` (a job's driver: two
pods of 2 CPUs), each case printing what it observed as one JSON line:
    python ray_idiom_cases.py ray|atl [CASE...]
test_ray_idiom.py runs both and compares. A case's value is what a user
sees: values, which exception class was caught, whether calls waited."""
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np

BACKEND = sys.argv[1]
if BACKEND == "ray":
    import ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
    from ray.util.placement_group import placement_group
    from ray.exceptions import GetTimeoutError
else:
    import atl as ray
    from atl.util.scheduling_strategies import PlacementGroupSchedulingStrategy
    from atl import placement_group, GetTimeoutError

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@ray.remote
def square(x):
    return x * x


@ray.remote
def nap(seconds):
    time.sleep(seconds)
    return seconds


@case
def resources_pend_until_they_fit():
    # 4 CPUs in all: two calls of 2 CPUs run at once, the third waits for one.
    start = time.monotonic()
    values = ray.get([nap.options(num_cpus=2).remote(1.0) for _ in range(3)])
    return {"values": values, "waited": time.monotonic() - start >= 1.9}


@case
def infeasible_never_runs():
    # Ray: pending for ever (a warning); atl: refused at once, saying why.
    try:
        ref = square.options(num_cpus=64).remote(2)
    except ValueError as e:
        return {"ran": False, "said": "infeasible" in str(e)}
    try:
        ray.get(ref, timeout=3)
        return {"ran": True}
    except GetTimeoutError:
        return {"ran": False, "said": True}


@case
def num_returns():
    @ray.remote(num_returns=3)
    def three():
        return "a", "b", "c"
    a, b, c = three.remote()
    return ray.get([c, a, b])


@case
def max_retries_after_a_killed_worker():
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "tries")

    @ray.remote(max_retries=2)
    def dies_twice(path):
        tries = int(open(path).read()) if os.path.exists(path) else 0
        open(path, "w").write(str(tries + 1))
        if tries < 2:
            os._exit(1)  # the worker process dies, as an OOM kill would
        return tries
    try:
        return ray.get(dies_twice.remote(path))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@case
def retry_exceptions():
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "tries")

    @ray.remote(max_retries=3, retry_exceptions=[KeyError])
    def flaky(path):
        tries = int(open(path).read()) if os.path.exists(path) else 0
        open(path, "w").write(str(tries + 1))
        if tries < 1:
            raise KeyError("not yet")
        return tries
    try:
        return ray.get(flaky.remote(path))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@case
def runtime_env_vars():
    @ray.remote
    def env():
        return os.environ.get("FOO")
    return ray.get(env.options(runtime_env={"env_vars": {"FOO": "bar"}}).remote())


@case
def placement_group_strategy():
    pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="PACK")
    ray.get(pg.ready(), timeout=60)
    strategy = PlacementGroupSchedulingStrategy(placement_group=pg,
                                                placement_group_bundle_index=1)
    value = ray.get(square.options(scheduling_strategy=strategy).remote(7))
    ray.util.remove_placement_group(pg) if BACKEND == "ray" else ray.remove_placement_group(pg)
    return value


@case
def spread_strategy():
    return sorted(ray.get([square.options(scheduling_strategy="SPREAD").remote(i)
                           for i in range(4)]))


@case
def max_concurrency():
    @ray.remote(max_concurrency=4)
    class Napper:
        def nap(self):
            time.sleep(1.0)
            return 1
    napper = Napper.remote()
    ray.get(napper.nap.remote())  # started
    start = time.monotonic()
    values = ray.get([napper.nap.remote() for _ in range(4)])
    return {"values": values, "at_once": time.monotonic() - start < 3.5}


@case
def detached_outlives_its_driver():
    # Another driver makes a detached and a plain actor and ends.
    code = ("import sys\n"
            "ray = __import__('ray' if sys.argv[1] == 'ray' else 'atl')\n"
            "ray.init(**({'address': sys.argv[2], 'namespace': 'idiom'} "
            "if sys.argv[1] == 'ray' else {}))\n"
            "@ray.remote\n"
            "class Keeper:\n"
            "    def ping(self):\n"
            "        return 'pong'\n"
            "Keeper.options(name='keeper', lifetime='detached').remote()\n"
            "Keeper.options(name='plain').remote()\n"
            "ray.shutdown()\n")
    import subprocess
    # This cluster's own address, not 'auto': another Ray on the machine (a
    # test's beside this one) may be the newest, and 'auto' takes that.
    address = ray.get_runtime_context().gcs_address if BACKEND == "ray" else ""
    subprocess.run([sys.executable, "-c", code, BACKEND, address], check=True, timeout=120,
                   cwd=os.path.dirname(os.path.abspath(__file__)))
    kept = ray.get(ray.get_actor("keeper").ping.remote())
    deadline = time.monotonic() + 60
    while True:  # the plain one ends with its driver (Ray: shortly after)
        try:
            ray.get_actor("plain")
        except ValueError:
            break
        if time.monotonic() > deadline:
            return {"kept": kept, "plain_gone": False}
        time.sleep(0.2)
    ray.kill(ray.get_actor("keeper"))
    return {"kept": kept, "plain_gone": True}


@ray.remote
def kinds(x, nested):
    return type(x).__name__, type(nested[0]).__name__, int(ray.get(nested[0]).sum())


@case
def ref_arguments_and_nested_refs():
    ref = ray.put(np.arange(100000))
    first = square.remote(3)
    return {"kinds": list(ray.get(kinds.remote(ref, [ref]))),
            "chained": ray.get(square.remote(first))}


@ray.remote
def total(a):
    return int(a.sum()), int(a.nbytes)


@case
def put_and_get_100_mb_and_1_gib():
    out = []
    for size in (100 * 1024 ** 2, 1024 ** 3):
        ref = ray.put(np.ones(size, dtype=np.uint8))
        out.append(list(ray.get(total.remote(ref))))
        del ref
    back = ray.get(ones.remote(100 * 1024 ** 2))
    out.append(int(back.sum()))
    return out


@ray.remote
def ones(n):
    return np.ones(n, dtype=np.uint8)


@case
def exceptions_keep_their_type():
    @ray.remote
    def fails():
        raise ValueError("bad input 7")
    try:
        ray.get(fails.remote())
    except ValueError as e:
        return {"caught": "ValueError", "said": "bad input 7" in str(e)}


@case
def get_actor_of_an_unknown_name():
    start = time.monotonic()
    try:
        ray.get_actor("nobody")
    except ValueError:
        return {"raised": "ValueError", "at_once": time.monotonic() - start < 5}


@case
def wait_for_the_first():
    refs = [nap.remote(0), nap.remote(30)]
    ready, not_ready = ray.wait(refs, num_returns=1, timeout=20)
    return [len(ready), len(not_ready), ray.get(ready[0])]


def main():
    names = sys.argv[2:] or list(CASES)
    if BACKEND == "ray":
        ray.init(num_cpus=4, namespace="idiom", include_dashboard=False,
                 log_to_driver=False)
    else:
        ray.init()
    for name in names:
        start = time.monotonic()
        try:
            result = {"value": CASES[name]()}
        except BaseException as e:
            result = {"error": f"{type(e).__name__}: {e}"[:2000],
                      "traceback": traceback.format_exc()[-3000:]}
        result["case"] = name
        result["seconds"] = round(time.monotonic() - start, 2)
        print(json.dumps(result), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
