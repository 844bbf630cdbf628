"""Ray Core's guarantees under `import atl as ray`, each a program written as
Ray's docs write them (no ray.init(): the first use connects), run as its own
driver process in a Python that has only the standard library (a bare venv:
no cloudpickle, no numpy, as Ray's own venv has no top-level cloudpickle):
a caller's actor calls in order, a driver ending mid-call exits with its own
code, async actors' calls interleaved at their awaits, tasks and actors
started from tasks and actors five levels down, a script's classes, lambdas
and exceptions sent and raised. Live cluster."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT, Cluster


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A venv's python without pip or the system's packages."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", "import cloudpickle"], capture_output=True)
    assert probe.returncode != 0, "the bare venv sees a cloudpickle: the test would prove nothing"
    return python


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(2)
    try:
        assert c.wait_for("initializing -> command"), c.output()
        yield c
    finally:
        c.stop()


def run_program(cluster, python, tmp_path, source, timeout=300):
    """`source` as a driver script of its own; (returncode, stdout, stderr, seconds)."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source))
    env = dict(cluster.env, ATL_ADDRESS=cluster.address, ATL_TLS_DIR=cluster.tls,
               PYTHONPATH=os.path.join(ROOT, "python"))
    start = time.monotonic()
    r = subprocess.run([python, str(script)], capture_output=True, text=True, timeout=timeout,
                       env=env, cwd=str(tmp_path))
    return r.returncode, r.stdout, r.stderr, time.monotonic() - start


def test_a_callers_actor_calls_run_in_the_order_it_made_them(cluster, bare_python, tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import atl as ray

        @ray.remote
        class Counter:
            def __init__(self):
                self.seen = []

            def add(self, i):
                self.seen.append(i)

            def get(self):
                return self.seen

        c = Counter.remote()
        for i in range(10000):
            c.add.remote(i)
        seen = ray.get(c.get.remote())
        print("calls", len(seen), "in order", seen == list(range(10000)))
    """)
    assert rc == 0, (out, err)
    assert "calls 10000 in order True" in out, (out, err)


def test_a_driver_ending_while_an_actor_call_runs_exits_at_once_with_its_code(
        cluster, bare_python, tmp_path):
    rc, out, err, seconds = run_program(cluster, bare_python, tmp_path, """
        import sys
        import time
        import atl as ray

        @ray.remote
        class Sleeper:
            def forever(self):
                time.sleep(3600)

            def ping(self):
                return "pong"

        a = Sleeper.remote()
        print(ray.get(a.ping.remote()), flush=True)
        a.forever.remote()
        time.sleep(0.5)  # the call is under way
        print("end", time.monotonic(), flush=True)
        sys.exit(3)
    """, timeout=120)
    assert rc == 3, (rc, out, err)
    assert "pong" in out, (out, err)
    ended_at = float(out.split("end ")[1].split()[0])
    # From its last line to its exit (its actor killed on the way out).
    assert time.monotonic() - ended_at < 2 + 1, (out, err)


def test_async_actor_calls_interleave_at_their_awaits(cluster, bare_python, tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import asyncio
        import time
        import atl as ray

        @ray.remote
        class AsyncActor:
            def __init__(self):
                self.running = 0
                self.most = 0

            async def nap(self, i):
                self.running += 1
                self.most = max(self.most, self.running)
                await asyncio.sleep(1)
                self.running -= 1
                return i

            async def most_at_once(self):
                return self.most

        a = AsyncActor.remote()
        ray.get(a.most_at_once.remote())
        start = time.monotonic()
        values = ray.get([a.nap.remote(i) for i in range(100)])
        took = time.monotonic() - start
        print("values", values == list(range(100)), "at once", ray.get(a.most_at_once.remote()),
              "took", round(took, 1))
    """)
    assert rc == 0, (out, err)
    assert "values True" in out, (out, err)
    at_once = int(out.split("at once ")[1].split()[0])
    took = float(out.split("took ")[1].split()[0])
    assert at_once == 100, out  # every await was under way at once
    assert took < 30, out  # not 100 one after another


def test_an_async_actors_waiters_and_the_call_that_frees_them_from_one_caller(
        cluster, bare_python, tmp_path):
    # 500 calls from one caller await an event a later call of the same
    # caller sets (an async actor takes 1000 at once, as Ray's): none waits
    # behind the waiters (with at most 100 under way per caller, the 101st
    # and the one that frees them never started: a hang).
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import asyncio, time
        import atl as ray

        @ray.remote
        class Gate:
            def __init__(self):
                self.event = asyncio.Event()
                self.waiting = 0

            async def wait(self):
                self.waiting += 1
                await self.event.wait()
                return 1

            async def open(self):
                self.event.set()
                return self.waiting

        gate = Gate.remote()
        refs = [gate.wait.remote() for _ in range(500)]
        print("waiting when opened", ray.get(gate.open.remote(), timeout=120))
        print("freed", sum(ray.get(refs, timeout=120)))
    """)
    assert rc == 0, (out, err)
    assert "freed 500" in out, (out, err)


def test_tasks_and_actors_start_tasks_and_actors_five_levels_down(cluster, bare_python,
                                                                 tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import atl as ray

        @ray.remote
        class Node:
            def __init__(self, depth):
                self.depth = depth

            def below(self):
                return ray.get(level.remote(self.depth - 1))

        @ray.remote
        def level(depth):
            if depth == 0:
                return ["leaf"]
            if depth % 2:
                # An actor started from a task, called from it.
                return ["actor"] + ray.get(Node.remote(depth).below.remote())
            return ["task"] + ray.get(level.remote(depth - 1))

        print(ray.get(level.remote(5), timeout=240))
    """)
    assert rc == 0, (out, err)
    assert "['actor', 'task', 'actor', 'task', 'actor', 'leaf']" in out, (out, err)


def _newer_pythons():
    """Pythons of 3.12 and later this machine has (python3.1x on PATH, or
    pyenv's versions): found, never required."""
    import glob
    import shutil
    found = {}
    candidates = [shutil.which(f"python3.{minor}") for minor in range(12, 16)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    for path in filter(None, candidates):
        try:
            version = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                     capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if version and version not in found:
            found[version] = os.path.realpath(path)
    return sorted(found.items())


NEWER_PYTHONS = _newer_pythons()


@pytest.mark.parametrize("version,interpreter", NEWER_PYTHONS or [("none", None)],
                         ids=[v for v, _ in NEWER_PYTHONS] or ["none"])
def test_the_same_travel_on_a_newer_python_without_cloudpickle(cluster, tmp_path, version,
                                                               interpreter):
    # Python 3.12 and later changed what a function's code carries: the
    # copy of cloudpickle atl ships must serve them (atl's 2.2.0 did not,
    # and a script's classes then could not travel).
    if interpreter is None:
        pytest.skip("no Python >= 3.12 on this machine (python3.12..., pyenv)")
    venv = tmp_path / "venv"
    subprocess.run([interpreter, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", "import cloudpickle"], capture_output=True)
    assert probe.returncode != 0, "this venv sees a cloudpickle: the test would prove nothing"
    test_a_scripts_classes_lambdas_and_exceptions_travel_without_cloudpickle_installed(
        cluster, python, tmp_path)


def test_a_scripts_classes_lambdas_and_exceptions_travel_without_cloudpickle_installed(
        cluster, bare_python, tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import sys, threading
        import atl as ray

        lock = threading.Lock()  # a global the class's own attribute shares a name with

        class Point:
            def __init__(self, x):
                self.x = x

        class MyError(Exception):
            pass

        @ray.remote
        def double(p):
            return Point(p.x * 2)

        @ray.remote
        def apply(f, v):
            return f(v)

        @ray.remote
        def fail(why):
            raise MyError(why)

        @ray.remote
        class Guarded:
            def __init__(self):
                self.lock = threading.Lock()
                self.n = 0

            def bump(self):
                with self.lock:
                    self.n += 1
                    return self.n

        p = ray.get(double.remote(Point(3)))
        print("point", type(p).__name__, p.x)
        print("lambda", ray.get(apply.remote(lambda v: v + 1, 41)))
        try:
            ray.get(fail.remote("as meant"))
        except MyError as e:
            print("caught", type(e).__name__, "as meant" in str(e))
        g = Guarded.remote()
        print("guarded", ray.get([g.bump.remote() for _ in range(3)]))

        @ray.remote
        def where():
            return "%d.%d" % sys.version_info[:2]
        print("ran on", ray.get(where.remote()) == "%d.%d" % sys.version_info[:2])
    """)
    assert rc == 0, (out, err)
    assert "point Point 6" in out, (out, err)
    assert "lambda 42" in out, (out, err)
    assert "caught TaskError(MyError) True" in out, (out, err)  # as Ray's RayTaskError(MyError)
    assert "guarded [1, 2, 3]" in out, (out, err)
    assert "ran on True" in out, (out, err)  # the tasks ran on the driver's Python


def test_rays_api_surface_as_its_docs_use_it(cluster, bare_python, tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import time
        import atl as ray
        from atl.exceptions import GetTimeoutError, RayTaskError, TaskCancelledError
        from atl.util import ActorPool
        from atl.util.placement_group import placement_group, remove_placement_group
        from atl.util.queue import Empty, Queue
        from atl.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        @ray.remote
        class Worker:
            @ray.method(num_returns=2)
            def pair(self, v):
                return v, v * 10

            def double(self, v):
                return 2 * v

            def name(self):  # as the handle's own attribute is called
                return "a method named name"

            def call(self):
                return "a method named call"

        w = Worker.remote()
        a, b = w.pair.remote(4)
        print("pair", ray.get([a, b]))
        print("names", ray.get(w.name.remote()), "/", ray.get(w.call.remote()))

        pool = ActorPool([Worker.remote(), Worker.remote()])
        print("pool", list(pool.map(lambda actor, v: actor.double.remote(v), [1, 2, 3, 4])))
        print("unordered", sorted(pool.map_unordered(lambda a, v: a.double.remote(v), [5, 6])))

        q = Queue(maxsize=10)

        @ray.remote
        def produce(queue, n):
            for i in range(n):
                queue.put(i)
            return n

        ray.get(produce.remote(q, 5))
        print("queue", [q.get(timeout=10) for _ in range(5)])
        try:
            q.get(timeout=0.2)
        except Empty:
            print("queue empty")

        @ray.remote
        def where():
            return ray.get_runtime_context().get_node_id()

        node = ray.get(where.remote())
        on = [ray.get(where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            node_id=node, soft=False)).remote()) for _ in range(4)]
        print("affinity", set(on) == {node})

        pg = placement_group([{"CPU": 1}])
        ray.get(pg.ready(), timeout=60)
        remove_placement_group(pg)
        print("placement group ready")

        @ray.remote
        def fails():
            raise ValueError("bad value")

        try:
            ray.get(fails.remote())
        except RayTaskError as e:
            print("task error", isinstance(e, ValueError))

        @ray.remote
        def slow():
            time.sleep(60)

        try:
            ray.get(slow.remote(), timeout=0.5)
        except GetTimeoutError:
            print("timed out")
        ref = slow.remote()
        time.sleep(0.5)
        ray.cancel(ref)
        try:
            ray.get(ref, timeout=30)
        except TaskCancelledError:
            print("cancelled")
    """)
    assert rc == 0, (out, err)
    for line in ("pair [4, 40]", "names a method named name / a method named call",
                 "pool [2, 4, 6, 8]", "unordered [10, 12]", "queue [0, 1, 2, 3, 4]",
                 "queue empty", "affinity True", "placement group ready", "task error True",
                 "timed out", "cancelled"):
        assert line in out, (line, out, err)


def test_calls_with_their_own_reservation_run_in_warm_processes(cluster, bare_python, tmp_path):
    # Ray's "limit running tasks" pattern: each call holds a CPU while it
    # runs, in one of the workers Ray keeps, not a new process each (1,000
    # such calls took over 180 s when each started its own).
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import os
        import time
        import atl as ray

        @ray.remote(num_cpus=1)
        def where(i):
            return os.getpid()

        total = ray.cluster_resources()["CPU"]
        pids = ray.get([where.remote(i) for i in range(1000)])
        deadline = time.monotonic() + 30
        while ray.available_resources().get("CPU") != total and time.monotonic() < deadline:
            time.sleep(0.1)
        print("calls", len(pids), "processes", len(set(pids)),
              "cpus back", ray.available_resources().get("CPU") == total)
    """)
    assert rc == 0, (out, err)
    assert "calls 1000" in out and "cpus back True" in out, (out, err)
    processes = int(out.split("processes ")[1].split()[0])
    # The warm ones (a pod's CPUs each, here 2 pods): far fewer than 1,000.
    assert processes <= 16, out


def test_calls_with_their_own_reservation_lease_it_call_after_call(cluster, bare_python,
                                                                  tmp_path):
    # A reservation per call cost three round trips to the head (create,
    # ready, remove): 1,000 num_cpus=1 calls took 3x Ray's time. Leased as
    # Ray's workers are: as many groups as run at once, the CPU bound kept,
    # a call that raises keeps its lease, one whose process dies gives it
    # up, a queued call cancelled never runs, idle leases go within seconds.
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import os
        import time
        import atl as ray
        import atl.exceptions
        from atl import _placement

        made = []
        original = _placement.placement_group

        def counted(*args, **kwargs):
            made.append(1)
            return original(*args, **kwargs)
        _placement.placement_group = counted

        @ray.remote(num_cpus=1)
        def span(i, pause=0.05):
            start = time.time()
            time.sleep(pause)
            return i, start, time.time()

        total = int(ray.cluster_resources()["CPU"])
        spans = ray.get([span.remote(i) for i in range(200)])
        most = max(sum(1 for _, s, e in spans if s <= t < e) for _, t, _ in spans)
        print("in order", [i for i, _, _ in spans] == list(range(200)))
        print("at once at most", most, "of", total)
        print("groups made", len(made))

        @ray.remote(num_cpus=1)
        def boom():
            raise ValueError("boom")

        raised = 0
        for ref in [boom.remote() for _ in range(8)]:
            try:
                ray.get(ref)
            except ValueError:
                raised += 1
        print("raised", raised, "then", len(ray.get([span.remote(i, 0) for i in range(8)])))

        @ray.remote(num_cpus=1)
        def die():
            os._exit(3)

        try:
            ray.get(die.remote())
            print("died False")
        except Exception as e:
            print("died", type(e).__name__)
        print("after a death", len(ray.get([span.remote(i, 0) for i in range(8)])))

        busy = [span.remote(i, 0.5) for i in range(total)]
        queued = span.remote(99, 0)
        ray.cancel(queued)
        try:
            ray.get(queued)
            print("cancelled False")
        except atl.exceptions.TaskCancelledError:
            print("cancelled True")
        ray.get(busy)
        deadline = time.monotonic() + 10
        while ray.available_resources().get("CPU") != total and time.monotonic() < deadline:
            time.sleep(0.1)
        print("cpus back", ray.available_resources().get("CPU") == total)
    """)
    assert rc == 0, (out, err)
    lines = out.splitlines()
    total = int(next(l for l in lines if l.startswith("at once")).split()[-1])
    assert "in order True" in lines, out
    assert f"at once at most {total} of {total}" in lines, out
    made = int(next(l for l in lines if l.startswith("groups made")).split()[-1])
    assert made <= total + 2, out  # leases (and a reservation or two under way), not 200
    assert "raised 8 then 8" in lines and "after a death 8" in lines, out
    assert "died False" not in lines and "cancelled True" in lines and "cpus back True" in lines, (
        out, err)


def test_generators_hand_a_ref_per_item_and_the_error_last(cluster, bare_python, tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import atl as ray

        @ray.remote
        def count(n):
            for i in range(n):
                yield i * i

        print("task", [ray.get(ref) for ref in count.remote(4)])

        @ray.remote
        def breaks():
            yield "first"
            raise ValueError("at the second")

        gen = breaks.remote()
        print("first", ray.get(next(gen)))
        try:
            ray.get(next(gen))
        except ValueError as e:
            print("second raised", "at the second" in str(e))
        print("then", next(gen, "nothing more"))

        @ray.remote(num_returns="dynamic")
        def dynamic(n):
            for i in range(n):
                yield i

        print("dynamic", [ray.get(r) for r in ray.get(dynamic.remote(3))])

        @ray.remote
        class Streamer:
            def letters(self, word):
                for c in word:
                    yield c

        s = Streamer.remote()
        print("actor", "".join(ray.get(r) for r in s.letters.remote("atl")))
    """)
    assert rc == 0, (out, err)
    for line in ("task [0, 1, 4, 9]", "first first", "second raised True", "then nothing more",
                 "dynamic [0, 1, 2]", "actor atl"):
        assert line in out, (line, out, err)


def test_a_generators_items_stream_to_the_caller_as_they_are_yielded(cluster, bare_python,
                                                                     tmp_path):
    # Each path a generator call takes (a warm process, a cold task with an
    # env of its own, an actor's method, an async actor's async generator):
    # the first item is the caller's while the generator still runs, waiting
    # on a file only the caller writes after it got that item. Gathered
    # items (the generator run to its end first) hang here.
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import asyncio, gc, os, time
        import atl as ray
        import atl._objects as objects

        GO = os.path.abspath("go")

        def wait_for_go(tag):
            while not os.path.exists(GO + tag):
                time.sleep(0.01)

        @ray.remote
        def warm(tag):
            yield "a"
            wait_for_go(tag)
            yield "b"

        @ray.remote(runtime_env={"env_vars": {"COLD": "1"}})
        def cold(tag):
            yield os.environ.get("COLD")
            wait_for_go(tag)
            yield "b"

        @ray.remote
        class Plain:
            def items(self, tag):
                yield "a"
                wait_for_go(tag)
                yield "b"

        @ray.remote
        class Async:
            async def items(self, tag):
                yield "a"
                while not os.path.exists(GO + tag):
                    await asyncio.sleep(0.01)
                yield "b"

        plain, aio = Plain.remote(), Async.remote()
        for tag, gen in (("1", warm.remote("1")), ("2", cold.remote("2")),
                         ("3", plain.items.remote("3")), ("4", aio.items.remote("4"))):
            first = ray.get(next(gen), timeout=120)
            open(GO + tag, "w").close()
            print(tag, first, [ray.get(r) for r in gen])

        # async for, as Ray's docs consume a generator in asyncio code.
        async def consume():
            return [ray.get(r) async for r in warm.remote("1")]
        print("async for", asyncio.run(consume()))

        # Items never taken from a dropped generator leave the store once
        # its call ended; a taken item lives as long as its ref.
        @ray.remote
        def big(n):
            for i in range(n):
                yield bytes(200_000) + bytes([i])
        before = objects.store().stats()[0]
        gen = big.remote(5)
        kept = next(gen)
        ray.get(gen.completed())
        del gen
        gc.collect()
        time.sleep(0.5)
        print("left", objects.store().stats()[0] - before, ray.get(kept)[-1])
        del kept
        gc.collect()
        time.sleep(0.5)
        print("after the ref", objects.store().stats()[0] - before)
    """)
    assert rc == 0, (out, err)
    for line in ("1 a ['b']", "2 1 ['b']", "3 a ['b']", "4 a ['b']", "async for ['a', 'b']",
                 "left 1 0", "after the ref 0"):
        assert line in out, (line, out, err)


def test_a_generator_with_backpressure_pauses_until_its_caller_takes_items(cluster, bare_python,
                                                                          tmp_path):
    # Ray's _generator_backpressure_num_objects on each path a generator
    # call takes (a warm process, a cold one with an env of its own, an
    # actor's method, an async actor's async generator): it pauses once 2
    # items wait unconsumed and goes on one item per `next`. A caller that
    # ends without taking them all does not hold its generator for ever,
    # nor does one killed while it holds the generator.
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import asyncio, os, time
        import atl as ray

        HERE = os.path.abspath(".")

        def note(tag, i):
            with open(os.path.join(HERE, "made-" + tag), "a") as f:
                f.write(f"{i} {os.getpid()}\\n")

        def made(tag):
            try:
                with open(os.path.join(HERE, "made-" + tag)) as f:
                    return f.read().splitlines()
            except FileNotFoundError:
                return []

        def settle(tag, n):
            deadline = time.time() + 60
            while len(made(tag)) < n and time.time() < deadline:
                time.sleep(0.02)
            time.sleep(0.5)  # (a generator that does not pause goes past n meanwhile)
            return len(made(tag))

        @ray.remote(_generator_backpressure_num_objects=2)
        def warm(tag, n):
            for i in range(n):
                note(tag, i)
                yield i

        MARK = "bp-" + str(os.getpid())  # (in its environment: found from here, across pods)

        def marked():
            pids = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if f"ATL_TEST_MARK={MARK}".encode() in f.read():
                            pids.append(pid)
                except OSError:
                    pass
            return pids

        @ray.remote(_generator_backpressure_num_objects=2,
                    runtime_env={"env_vars": {"ATL_TEST_MARK": MARK}})
        def cold(tag, n):
            for i in range(n):
                note(tag, i)
                yield i

        @ray.remote
        class Plain:
            @ray.method(_generator_backpressure_num_objects=2)
            def items(self, tag, n):
                for i in range(n):
                    note(tag, i)
                    yield i

        @ray.remote
        class Async:
            @ray.method(_generator_backpressure_num_objects=2)
            async def items(self, tag, n):
                for i in range(n):
                    note(tag, i)
                    await asyncio.sleep(0)
                    yield i

        plain, aio = Plain.remote(), Async.remote()
        for tag, gen in (("w", warm.remote("w", 6)), ("c", cold.remote("c", 6)),
                         ("p", plain.items.remote("p", 6)), ("a", aio.items.remote("a", 6))):
            print(tag, "paused at", settle(tag, 2))
            first = ray.get(next(gen), timeout=60)
            print(tag, "took", first, "then made", settle(tag, 3))
            print(tag, "the rest", [ray.get(r, timeout=60) for r in gen], "made", len(made(tag)))

        @ray.remote
        def caller(tag):
            gen = warm.remote(tag, 6)
            return ray.get(next(gen))
        print("a caller took", ray.get(caller.remote("x"), timeout=60),
              "and ended: made", settle("x", 6))

        @ray.remote
        class Holder:
            def start(self, tag):
                self.gen = cold.remote(tag, 6)
                return ray.get(next(self.gen))
        holder = Holder.remote()
        print("a holder took", ray.get(holder.start.remote("k"), timeout=60))
        settle("k", 3)
        print("its generator's process runs:", bool(marked()))
        ray.kill(holder)
        deadline = time.time() + 60
        while marked() and time.time() < deadline:
            time.sleep(0.05)
        print("its generator's process ended:", not marked())
    """)
    assert rc == 0, (out, err)
    for tag in "wcpa":
        for line in (f"{tag} paused at 2", f"{tag} took 0 then made 3",
                     f"{tag} the rest [1, 2, 3, 4, 5] made 6"):
            assert line in out, (line, out, err)
    for line in ("a caller took 0 and ended: made 6", "a holder took 0",
                 "its generator's process runs: True", "its generator's process ended: True"):
        assert line in out, (line, out, err)


def test_an_actor_with_max_restarts_is_made_again_for_every_caller(cluster, bare_python,
                                                                   tmp_path):
    # Its reservation is kept across its restarts and given back at its end;
    # a handle passed to a task finds the new process; atl.kill's
    # no_restart=False restarts it, a kill -9 too (the call right after it
    # may meet the old process: sent again, max_task_retries), atl.kill ends
    # it for good.
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import os, signal, threading, time
        import atl as ray

        @ray.remote(max_restarts=3, max_task_retries=-1, num_cpus=1)
        class Box:
            def __init__(self):
                self.n = 0

            def add(self):
                self.n += 1
                return self.n

            def pid(self):
                return os.getpid()

            def killed_soon(self):  # a kill -9 of its process, after this answer
                threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()
                return os.getpid()

        @ray.remote
        def use(box):
            return ray.get(box.add.remote())

        def cpus():
            return ray.available_resources().get("CPU", 0)

        free = cpus()
        box = Box.remote()
        print("task", ray.get(use.remote(box)), "held", free - cpus())
        pid = ray.get(box.pid.remote())
        ray.kill(box, no_restart=False)
        print("after kill(no_restart=False)", ray.get(box.add.remote()),
              ray.get(box.pid.remote()) != pid, "held", free - cpus())
        print("task again", ray.get(use.remote(box)))
        old = ray.get(box.killed_soon.remote())
        while ray.get(box.pid.remote()) == old:  # (answered by the old one until it ends)
            time.sleep(0.05)
        print("after kill -9", ray.get(box.add.remote()))
        ray.kill(box)
        try:
            ray.get(box.add.remote())
        except ray.exceptions.RayActorError:
            print("killed for good")
        deadline = time.monotonic() + 30
        while cpus() < free and time.monotonic() < deadline:
            time.sleep(0.1)
        print("given back", cpus() == free)
    """)
    assert rc == 0, (out, err)
    for line in ("task 1 held 1", "after kill(no_restart=False) 1 True held 1", "task again 2",
                 "after kill -9 1", "killed for good", "given back True"):
        assert line in out, (line, out, err)


def test_a_detached_actor_with_max_restarts_is_made_again_after_its_maker_is_gone(
        cluster, bare_python, tmp_path):
    # Ray's GCS restarts a detached actor whoever made it: here the head
    # does. Its maker exits; another driver finds it, its process dies (a
    # crash, then a kill -9 of its process) and it comes back each time,
    # as it was made (its constructor run again, its arguments kept);
    # kill(no_restart=False) from this driver restarts it too; its count
    # used, it stays dead. A detached actor killed (atl.kill) or ending
    # itself (exit_actor) is not made again, nor is one whose constructor
    # failed at its first start.
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import atl as ray

        @ray.remote
        class Keeper:
            def __init__(self, start):
                self.n = start

            def add(self):
                self.n += 1
                return self.n

            def pid(self):
                return os.getpid()

            def reconstructed(self):
                return ray.get_runtime_context().was_current_actor_reconstructed

            def crash(self):
                os._exit(3)

            def killed_soon(self):
                threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()

            def leave(self):
                ray.actor.exit_actor()

        import os, signal, threading
        k = Keeper.options(name="keeper", lifetime="detached", max_restarts=3).remote(100)
        print("made", ray.get(k.add.remote()), ray.get(k.reconstructed.remote()))
        for name in ("killed", "leaver"):
            Keeper.options(name=name, lifetime="detached", max_restarts=-1).remote(0)

        @ray.remote
        class Broken:  # fails at its first start only: a start again would stay up
            def __init__(self, mark):
                if not os.path.exists(mark):
                    open(mark, "w").close()
                    raise ValueError("no good")
        broken = Broken.options(name="broken", lifetime="detached", max_restarts=-1).remote(
            os.path.abspath("broken-once"))
        try:
            ray.get(broken.__ray_ready__.remote())
        except ray.exceptions.RayActorError as e:
            print("constructor:", isinstance(e.cause, ValueError), "no good" in str(e))
        # Its maker's kill of an actor whose process ended already is
        # nothing, as Ray's (it raised "task N has ended already").
        short = Keeper.remote(0)
        try:
            ray.get(short.crash.remote())
        except ray.exceptions.RayActorError:
            pass
        import time
        time.sleep(1)
        ray.kill(short)
        print("a dead one killed: fine")
        print("maker ends")
    """)
    assert rc == 0, (out, err)
    for line in ("made 101 False", "constructor: True True", "a dead one killed: fine",
                 "maker ends"):
        assert line in out, (line, out, err)

    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import time
        import atl as ray

        def call(actor, method, timeout=60):
            # Calls right after a death may meet the old process: tried again
            # until the new one answers (as a caller with retries would).
            deadline = time.monotonic() + timeout
            while True:
                try:
                    return ray.get(getattr(actor, method).remote(), timeout=timeout)
                except ray.exceptions.RayActorError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

        k = ray.get_actor("keeper")
        print("found", call(k, "add"))
        pid = call(k, "pid")
        k.crash.remote()
        while call(k, "pid") == pid:
            time.sleep(0.05)
        print("after a crash", call(k, "add"), call(k, "reconstructed"))
        pid = call(k, "pid")
        k.killed_soon.remote()
        while call(k, "pid") == pid:
            time.sleep(0.05)
        print("after kill -9", call(k, "add"))
        pid = call(k, "pid")
        ray.kill(k, no_restart=False)
        while call(k, "pid") == pid:
            time.sleep(0.05)
        print("after kill(no_restart=False)", call(k, "add"))
        k.crash.remote()  # its fourth end: its 3 restarts are used
        deadline = time.monotonic() + 30
        while "keeper" in ray.util.list_named_actors() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)
        print("used up, gone:", "keeper" not in ray.util.list_named_actors())

        killed = ray.get_actor("killed")
        print("killed found", call(killed, "add"))
        ray.kill(killed)
        leaver = ray.get_actor("leaver")
        print("leaver found", call(leaver, "add"))
        leaver.leave.remote()
        time.sleep(3)  # (a restart would be back by now: the first is at once)
        names = ray.util.list_named_actors()
        print("killed gone:", "killed" not in names, "leaver gone:", "leaver" not in names,
              "broken never back:", "broken" not in names)
    """)
    assert rc == 0, (out, err)
    for line in ("found 102", "after a crash 101 True", "after kill -9 101",
                 "after kill(no_restart=False) 101", "used up, gone: True", "killed found 1",
                 "leaver found 1", "killed gone: True leaver gone: True broken never back: True"):
        assert line in out, (line, out, err)


def test_init_num_cpus_bounds_what_the_drivers_calls_hold_at_once(cluster, bare_python,
                                                                 tmp_path):
    rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
        import time
        import atl as ray

        ray.init(num_cpus=2, ignore_reinit_error=True, logging_level="ERROR")

        @ray.remote
        def span(i):
            start = time.time()
            time.sleep(0.3)
            return start, time.time()

        spans = ray.get([span.remote(i) for i in range(8)])
        most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
        print("at once at most", most)
    """)
    assert rc == 0, (out, err)
    assert "at once at most 2" in out, (out, err)


def test_a_killed_drivers_groups_actors_and_leases_end_with_its_connection(cluster, bare_python,
                                                                            tmp_path):
    # SIGKILL runs no atexit: the head removes what the driver made when its
    # connection ends, as Ray's GCS does for a dead job (before, every CPU
    # stayed held and the next driver's num_cpus calls waited for ever);
    # what it made detached outlives it.
    import atl
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent("""
        import time
        import atl as ray
        from atl.util.placement_group import placement_group

        pg = placement_group([{"CPU": 1}])
        ray.get(pg.ready())
        kept = placement_group([{"CPU": 1}], lifetime="detached", name="kept")
        ray.get(kept.ready())

        @ray.remote
        class Holder:
            def ping(self):
                return "pong"

        h = Holder.options(num_cpus=1).remote()
        stays = Holder.options(name="stays", lifetime="detached").remote()
        ray.get([h.ping.remote(), stays.ping.remote()])

        @ray.remote(num_cpus=1)
        def f():
            return 1
        ray.get([f.remote() for _ in range(8)])  # leases, kept a moment
        print("ready", ray.available_resources()["CPU"], flush=True)
        time.sleep(600)
    """))
    env = dict(cluster.env, ATL_ADDRESS=cluster.address, ATL_TLS_DIR=cluster.tls,
               PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.Popen([bare_python, str(script)], stdout=subprocess.PIPE, text=True, env=env,
                         cwd=str(tmp_path))
    atl.init(cluster.address, cluster.tls)
    try:
        total = atl.cluster_resources()["CPU"]
        line = p.stdout.readline().split()
        assert line[0] == "ready" and float(line[1]) < total - 2, line
        p.kill()
        p.wait(30)
        deadline = time.monotonic() + 30
        while atl.available_resources()["CPU"] != total - 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        # All back but the detached group's CPU; the detached actor answers.
        assert atl.available_resources()["CPU"] == total - 1, atl.cluster_state()
        stays = atl.get_actor("stays")
        assert atl.get(stays.ping.remote()) == "pong"
        atl.kill(stays)
        kept = [g for g in atl.cluster_state()["groups"] if g.get("name") == "kept"]
        assert len(kept) == 1 and kept[0]["state"] == "CREATED", kept
        atl._c().pg_remove(kept[0]["id"])
    finally:
        if p.poll() is None:
            p.kill()
        atl.shutdown()


def test_a_drivers_groups_and_reservations_end_with_it(cluster, bare_python, tmp_path):
    # As Ray's: a job's placement groups (but detached ones) and its actors'
    # reservations are given back when its driver exits, removed or not.
    import atl
    atl.init(cluster.address, cluster.tls)
    try:
        total = atl.cluster_resources()["CPU"]
        rc, out, err, _ = run_program(cluster, bare_python, tmp_path, """
            import atl as ray
            from atl.util.placement_group import placement_group

            pg = placement_group([{"CPU": 1}])
            ray.get(pg.ready())

            @ray.remote(num_cpus=1)
            class Holder:
                def ping(self):
                    return "pong"

            h = Holder.remote()
            print(ray.get(h.ping.remote()), ray.available_resources()["CPU"])
        """)
        assert rc == 0, (out, err)
        assert out.split() == ["pong", str(total - 2)], out
        deadline = time.monotonic() + 30
        while atl.available_resources()["CPU"] != total and time.monotonic() < deadline:
            time.sleep(0.1)
        assert atl.available_resources()["CPU"] == total, atl.cluster_state()
    finally:
        atl.shutdown()
