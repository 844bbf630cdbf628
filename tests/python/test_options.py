"""atl.remote()/.options()/init() never accept an option and ignore it: each
is honoured (Ray's spelling mapped onto atl's) or refused with a TypeError
that names it and says what to do. No cluster needed: options are checked
when the decorator or .options() runs, before anything is sent."""
import os

import pytest

import atl
from atl import _options


def f(x):
    return x


class Counter:
    def add(self, n):
        return n


def refused(make, *words):
    with pytest.raises(TypeError) as e:
        make()
    for w in words:
        assert w in str(e.value), str(e.value)
    return str(e.value)


def test_atls_own_options_and_rays_runtime_env_are_taken():
    g = atl.remote(pod="jo-x-worker-1", env={"A": "1"}, working_dir="/data")(f)
    assert g._options == {"pod": "jo-x-worker-1", "env": {"A": "1"}, "working_dir": "/data"}
    h = atl.remote(f).options(runtime_env={"env_vars": {"FOO": "bar"}, "working_dir": "/w"})
    assert h._options == {"env": {"FOO": "bar"}, "working_dir": "/w"}
    # Ray's defaults are atl's behaviour: taken, and nothing to act on.
    d = atl.remote(max_retries=0, retry_exceptions=False, runtime_env=None)(f)
    assert d._options == {}
    named = atl.remote(f).options(name="step")
    assert named.__name__ == "step"
    a = atl.remote(name="counter", max_concurrency=1, lifetime=None, start_timeout=30)(Counter)
    assert a._options == {"name": "counter", "start_timeout": 30}


def test_resource_counts_are_one_bundle_reserved_for_the_call():
    g = atl.remote(num_cpus=2, num_gpus=1, memory=2 ** 30, resources={"disk": 1})(f)
    assert g._options == {"demand": {"CPU": 2, "GPU": 1, "memory": 2 ** 30, "disk": 1}}
    # .options() adds to them; a zero drops one; all zero: no reservation.
    assert g.options(num_cpus=0.5)._options["demand"]["CPU"] == 0.5
    assert "demand" not in atl.remote(num_cpus=0)(f)._options
    a = atl.remote(num_cpus=1)(Counter)
    assert a._options == {"demand": {"CPU": 1}}


@pytest.mark.parametrize("options,words", [
    ({"num_cpus": -1}, "num_cpus=-1: expected a number >= 0"),
    ({"num_gpus": "2"}, "num_gpus='2'"),
    ({"num_cpus": True}, "num_cpus=True"),
    ({"memory": float("inf")}, "memory=inf"),
    ({"resources": {"CPU": 1}}, "use num_cpus"),
    ({"resources": [1]}, "resources must be a dict"),
    ({"resources": {"disk": -2}}, "resources['disk']=-2"),
    ({"num_cpus": 1, "pod": "p"}, "with pod= or \"SPREAD\""),
    ({"num_cpus": 1, "scheduling_strategy": "SPREAD"}, "placement group instead"),
    ({"accelerator_type": "A100"}, "--mode ray"),
])
def test_bad_resource_counts_are_refused_saying_which(options, words):
    refused(lambda: atl.remote(**options)(f), words)
    refused(lambda: atl.remote(f).options(**options), "f.options", words)


def test_retries_are_taken_and_bad_ones_refused():
    assert atl.remote(max_retries=3)(f)._options == {"max_retries": 3}
    assert atl.remote(max_retries=-1, retry_exceptions=[KeyError])(f)._options == {
        "max_retries": -1, "retry_exceptions": (KeyError,)}
    assert atl.remote(retry_exceptions=True)(f)._options == {"retry_exceptions": True}
    refused(lambda: atl.remote(max_retries=-2)(f), "max_retries=-2", ">= -1")
    refused(lambda: atl.remote(max_retries=1.5)(f), "max_retries=1.5")
    refused(lambda: atl.remote(retry_exceptions=[int])(f), "retry_exceptions=[<class 'int'>]")
    refused(lambda: atl.remote(retry_exceptions="yes")(f), "retry_exceptions='yes'")
    # An actor's calls are not retried (Ray's max_task_retries): refused for a class.
    refused(lambda: atl.remote(max_retries=1)(Counter), "unknown option 'max_retries'")


def test_actor_options_atl_honours_are_taken_and_bad_ones_refused():
    a = atl.remote(max_concurrency=4, lifetime="detached", get_if_exists=True, name="n")(Counter)
    assert a._options == {"max_concurrency": 4, "detached": True, "get_if_exists": True,
                          "name": "n"}
    assert atl.remote(max_concurrency=1, lifetime="non_detached")(Counter)._options == {}
    refused(lambda: atl.remote(max_concurrency=0)(Counter), "max_concurrency=0", "1 to 1000")
    refused(lambda: atl.remote(max_concurrency=1001)(Counter), "max_concurrency=1001")
    refused(lambda: atl.remote(lifetime="forever")(Counter), "lifetime='forever'")
    refused(lambda: atl.remote(get_if_exists=1)(Counter), "get_if_exists=1")


def test_actor_restarts_are_taken_and_bad_counts_refused():
    a = atl.remote(max_restarts=4, max_task_retries=-1)(Counter)
    assert a._options == {"max_restarts": 4, "max_task_retries": -1}
    assert atl.remote(max_restarts=0, max_task_retries=0)(Counter)._options == {}
    refused(lambda: atl.remote(max_restarts=-2)(Counter), "max_restarts=-2", ">= 0, or -1")
    refused(lambda: atl.remote(max_task_retries=1.5)(Counter), "max_task_retries=1.5")
    refused(lambda: atl.remote(max_restarts=True)(Counter), "max_restarts=True")
    # A task's own retries are max_retries: these are an actor's.
    refused(lambda: atl.remote(max_restarts=1)(f), "unknown option 'max_restarts'")


@pytest.mark.parametrize("option,value,words", [
    ("max_pending_calls", 5, "without a bound"),
])
def test_actor_options_other_than_atls_behaviour_are_refused(option, value, words):
    refused(lambda: atl.remote(**{option: value})(Counter), "actor class Counter",
            f"{option}={value!r}", words)


def test_scheduling_strategies_as_ray_spells_them():
    from atl.util.scheduling_strategies import PlacementGroupSchedulingStrategy
    pg = object()  # any group: the options only carry it
    o = atl.remote(f).options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 2))._options
    assert o == {"placement_group": pg, "placement_group_bundle_index": 2}
    o = atl.remote(Counter).options(
        scheduling_strategy=PlacementGroupSchedulingStrategy(pg))._options
    assert o == {"placement_group": pg, "placement_group_bundle_index": None}  # in turn
    assert atl.remote(scheduling_strategy="SPREAD")(f)._options == {"spread": True}
    assert atl.remote(scheduling_strategy="DEFAULT")(f)._options == {}
    refused(lambda: atl.remote(scheduling_strategy="NODE_AFFINITY")(f),
            "scheduling_strategy='NODE_AFFINITY'", "SPREAD", "--mode ray")
    # Capturing child tasks: the group's processes' tasks and actors go to it.
    captures = atl.remote(f).options(scheduling_strategy=PlacementGroupSchedulingStrategy(
        pg, placement_group_capture_child_tasks=True))
    assert captures._options == {"placement_group": pg, "placement_group_bundle_index": None,
                                 "capture": True}
    o = captures.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 1))._options
    assert o == {"placement_group": pg, "placement_group_bundle_index": 1}
    o = atl.remote(placement_group=pg, placement_group_capture_child_tasks=True)(f)._options
    assert o == {"placement_group": pg, "capture": True}
    with pytest.raises(TypeError):
        PlacementGroupSchedulingStrategy(pg, -2)


def test_num_returns_is_taken_for_tasks_only():
    assert atl.remote(num_returns=3)(f)._options == {"num_returns": 3}
    assert atl.remote(num_returns=1)(f)._options == {}
    for bad in (0, -1, 10001, "2", 2.0, True):
        refused(lambda: atl.remote(f).options(num_returns=bad), "num_returns=", "1 to 10000")
    refused(lambda: atl.remote(num_returns=2)(Counter), "unknown option 'num_returns'")


def test_generator_backpressure_is_a_bound_of_one_or_more_for_tasks_and_methods():
    bp = "_generator_backpressure_num_objects"
    assert atl.remote(**{bp: 2})(f)._options == {"backpressure": 2}
    # -1 (Ray's "no bound") and None are the default: nothing to act on,
    # and .options() of either lifts a bound set before.
    assert atl.remote(**{bp: -1})(f)._options == {}
    assert atl.remote(**{bp: 3})(f).options(**{bp: -1})._options == {}
    with pytest.raises(ValueError, match="=0 is not allowed"):
        atl.remote(**{bp: 0})(f)
    for bad in (-2, 1.5, "2", True):
        refused(lambda: atl.remote(f).options(**{bp: bad}), f"{bp}={bad!r}", ">= 1")
    refused(lambda: atl.remote(**{bp: 2})(Counter), f"unknown option '{bp}'")
    # An actor's method takes it (@atl.method, or its call's .options()).
    from atl import _actors
    assert _actors._method_options({bp: 4}, "items") == {"backpressure": 4}
    assert _actors._method_options({bp: -1}, "items") == {"backpressure": None}
    with pytest.raises(ValueError, match="=0 is not allowed"):
        _actors._method_options({bp: 0}, "items")
    refused(lambda: _actors._method_options({"max_retries": 1}, "items"),
            "option 'max_retries' is not supported", bp)


def test_a_misspelt_option_is_refused_with_the_nearest_name():
    refused(lambda: atl.remote(num_cpu=1)(f), "unknown option 'num_cpu'",
            "did you mean 'num_cpus'?")
    refused(lambda: atl.remote(f).options(plcement_group=None), "did you mean 'placement_group'")
    refused(lambda: atl.remote(f).options(zzz=1), "unknown option 'zzz'", "atl's are env, name")
    # A task has no start_timeout (an actor does).
    refused(lambda: atl.remote(start_timeout=5)(f), "unknown option 'start_timeout'")


def test_runtime_env_takes_env_vars_and_working_dir_only():
    refused(lambda: atl.remote(runtime_env={"pip": ["numpy"]})(f), "runtime_env['pip']",
            "--mode ray")
    refused(lambda: atl.remote(runtime_env={"env_vars": {"A": 1}})(f), "map names to strings")
    refused(lambda: atl.remote(runtime_env="x")(f), "must be a dict")
    refused(lambda: atl.remote(runtime_env={"working_dir": ""})(f), "must be a path")
    refused(lambda: atl.remote(env=["A=1"])(f), "env must be a dict")


def test_init_refuses_rays_options_by_name_before_connecting():
    refused(lambda: atl.init(num_gpus=1), "atl.init: option 'num_gpus'", "--mode ray")
    refused(lambda: atl.init(object_store_memory=10**9), "option 'object_store_memory'")
    refused(lambda: atl.init(num_cpus=0), "num_cpus=0", "a number > 0")
    # ignore_reinit_error means what atl does anyway (init again: a no-op);
    # an option refused beside it is still named.
    refused(lambda: atl.init(runtime_env={"pip": ["x"]}, ignore_reinit_error=True),
            "atl.init: option \"runtime_env['pip']\"", "--mode ray")
    refused(lambda: atl.init(namespace=""), "namespace=''", "non-empty")
    refused(lambda: atl.init(namespace="a::b"), "namespace='a::b'")


def test_a_namespace_is_an_actors_option():
    assert atl.remote(namespace="team")(Counter)._options == {"namespace": "team"}
    refused(lambda: atl.remote(namespace=3)(Counter), "namespace=3")
    refused(lambda: atl.remote(namespace="has space")(Counter), "namespace='has space'")


def test_every_option_named_in_the_module_is_classified_once():
    # A row in two tables would make its answer depend on the order of the checks.
    tables = [set(_options._ATL), set(_options._TASK_DEFAULTS), set(_options._RESOURCES)]
    actor_tables = [set(_options._ATL), set(_options._ACTOR_DEFAULTS), set(_options._RESOURCES)]
    for ts in (tables, actor_tables):
        seen = set()
        for t in ts:
            assert not (seen & t), seen & t
            seen |= t


def test_concurrency_groups_as_ray_spells_them():
    o = atl.remote(concurrency_groups={"io": 2, "compute": 4})(Counter)._options
    assert o == {"concurrency_groups": {"io": 2, "compute": 4}}
    for bad in ({"io": 0}, {"io": True}, {"": 1}, ["io"], {"io": 1001}):
        refused(lambda: atl.remote(concurrency_groups=bad)(Counter), "actor class Counter",
                "concurrency_groups=")
    # A task has none.
    refused(lambda: atl.remote(concurrency_groups={"io": 1})(f), "concurrency_groups")

    class Grouped:
        @atl.method(concurrency_group="io")
        def read(self):
            return 1
    assert Grouped.read.__atl_method_options__ == {"concurrency_group": "io"}
    with pytest.raises(TypeError, match="concurrency_group=3"):
        atl.method(concurrency_group=3)(lambda self: None)
    # A method's group the actor does not have: refused when it is made.
    with pytest.raises(ValueError, match="concurrency group 'io'"):
        atl.remote(concurrency_groups={"net": 1})(Grouped).remote()


def test_an_async_function_is_refused_as_a_task_as_ray_does():
    async def coro():
        return 1

    async def agen():
        yield 1
    for fn in (coro, agen):
        with pytest.raises(ValueError, match="'async def' should not be used for remote tasks"):
            atl.remote(fn)


def test_init_takes_rays_auto_and_refuses_rays_other_addresses_before_connecting():
    for address in ("local", "ray://head:10001"):
        with pytest.raises(atl.UsageError, match="is Ray's"):
            atl.init(address)
    assert not atl.is_initialized()


def test_max_calls_bounds_a_process_to_its_calls():
    # Ray's max_calls: any bound runs each call in a process of its own here.
    assert atl.remote(max_calls=1)(f)._options == {"max_calls": 1}
    assert atl.remote(max_calls=3)(f).options(num_cpus=1)._options == {
        "max_calls": 3, "demand": {"CPU": 1}}
    with pytest.raises(ValueError, match="'max_calls' is not supported in '.options"):
        atl.remote(f).options(max_calls=3)  # as Ray refuses it
    assert atl.remote(max_calls=0)(f)._options == {}
    with pytest.raises(ValueError, match="max_calls=-1: expected a whole number >= 0"):
        atl.remote(max_calls=-1)(f)
    refused(lambda: atl.remote(max_calls=1.5)(f), "max_calls=1.5")
    refused(lambda: atl.remote(max_calls=1)(Counter), "unknown option 'max_calls'")


def test_py_modules_are_directories_put_on_the_python_path(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    single = tmp_path / "lib" / "one.py"
    single.parent.mkdir()
    single.write_text("")
    o = atl.remote(f).options(runtime_env={"py_modules": [str(package), str(single), pytest]})
    assert o._options["py_modules"] == [
        str(tmp_path), str(single.parent), os.path.dirname(os.path.dirname(pytest.__file__))]
    refused(lambda: atl.remote(runtime_env={"py_modules": ["s3://bucket/m.zip"]})(f),
            "py_modules", "local directories")
    refused(lambda: atl.remote(runtime_env={"py_modules": ["m-1.0-py3-none-any.whl"]})(f),
            "py_modules")
    with pytest.raises(ValueError, match="does not exist"):
        atl.remote(runtime_env={"py_modules": [str(tmp_path / "missing")]})(f)
    refused(lambda: atl.remote(runtime_env={"py_modules": "pkg"})(f), "must be a list")
