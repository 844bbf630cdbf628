"""The same Ray-idiom programs (ray_idiom_cases.py) under Ray 2.60 and under
atl: each case's observed result must be what the case expects, under both
(Ray's half needs build/ray-venv, made here from PyPI on first use as the
Ray-mode tests make it; without it, atl's half still runs and is checked).
Where atl differs on purpose, the case's value is written so both read the
same (an infeasible call never runs: Ray waits for ever, atl refuses at once)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BIN, ROOT, Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
RAY_VENV = os.path.join(os.path.dirname(BIN), "ray-venv")

EXPECTED = {
    "resources_pend_until_they_fit": {"values": [1.0, 1.0, 1.0], "waited": True},
    "infeasible_never_runs": {"ran": False, "said": True},
    "num_returns": ["c", "a", "b"],
    "max_retries_after_a_killed_worker": 2,
    "retry_exceptions": 1,
    "runtime_env_vars": "bar",
    "placement_group_strategy": 49,
    "spread_strategy": [0, 1, 4, 9],
    "max_concurrency": {"values": [1, 1, 1, 1], "at_once": True},
    "detached_outlives_its_driver": {"kept": "pong", "plain_gone": True},
    "ref_arguments_and_nested_refs": {"kinds": ["ndarray", "ObjectRef", 4999950000],
                                      "chained": 81},
    "put_and_get_100_mb_and_1_gib": [[104857600, 104857600], [1073741824, 1073741824],
                                     104857600],
    "exceptions_keep_their_type": {"caught": "ValueError", "said": True},
    "get_actor_of_an_unknown_name": {"raised": "ValueError", "at_once": True},
    "wait_for_the_first": [1, 1, 0],
}


def _run(python, backend, env):
    r = subprocess.run([python, os.path.join(HERE, "ray_idiom_cases.py"), backend],
                       capture_output=True, text=True, timeout=900, env=env, cwd=HERE)
    results = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            results[item["case"]] = item
    return results, r


def _ray_venv():
    marker = os.path.join(RAY_VENV, ".atl-ray-2.60-tune")
    if not os.path.exists(marker):
        make = (f"flock {RAY_VENV}.lock sh -c '[ -e {marker} ] || {{ {{ [ -x {RAY_VENV}/bin/pip ]"
                f" || python3 -m venv {RAY_VENV}; }} && {RAY_VENV}/bin/pip install -q "
                f"\"ray[default,tune]==2.60.0\" && touch {marker}; }}' > {RAY_VENV}.log 2>&1")
        subprocess.run(make, shell=True, timeout=1200)
    return os.path.join(RAY_VENV, "bin", "python") if os.path.exists(marker) else None


@pytest.fixture(scope="module")
def atl_results():
    c = Cluster(2)
    try:
        assert c.wait_for("initializing -> command"), c.output()
        env = dict(c.env, ATL_ADDRESS=c.address, ATL_TLS_DIR=c.tls,
                   PYTHONPATH=os.path.join(ROOT, "python"))
        results, r = _run(sys.executable, "atl", env)
        assert results, (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
        yield results
    finally:
        c.stop()


@pytest.fixture(scope="module")
def ray_results(tmp_path_factory):
    python = _ray_venv()
    if python is None:
        pytest.skip(f"Ray 2.60 could not be installed from PyPI (see {RAY_VENV}.log)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATL_")}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # The local Ray its ray.init() starts keeps its session here, not in /tmp/ray.
    env["RAY_TMPDIR"] = str(tmp_path_factory.mktemp("ray"))
    results, r = _run(python, "ray", env)
    assert results, (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    return results


def _value(results, name):
    item = results.get(name)
    assert item is not None, f"{name} printed nothing"
    assert "error" not in item, f"{name}: {item['error']}\n{item.get('traceback', '')}"
    return item["value"]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_atl_as_ray(atl_results, name):
    assert _value(atl_results, name) == EXPECTED[name]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_ray_itself(ray_results, name):
    # The cases say what Ray does: the comparison's other half.
    assert _value(ray_results, name) == EXPECTED[name]
