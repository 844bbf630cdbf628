"""The Python package against a live local cluster (real processes)."""
import os
import pickle
import subprocess
import sys
import textwrap
import time

import pytest

import atl
from conftest import BIN, ROOT, Cluster


def square(x):
    return x * x


def test_the_packages_codes_are_the_librarys():
    from atl import _capi
    names = {_capi._lib.atl_code_name(c).decode() for c in range(7)}
    assert names == {"ok", "failed", "usage", "refused", "unreachable", "timeout", "internal"}
    assert _capi._lib.atl_code_name(_capi.REFUSED) == b"refused"
    assert _capi._lib.atl_code_name(_capi.TIMEOUT) == b"timeout"
    assert _capi._lib.atl_code_name(99) == b"unknown"


def test_nodes_and_resources(cluster):
    nodes = atl.nodes()
    assert sorted(n["pod"] for n in nodes) == [f"{cluster.job_id}-worker-0",
                                               f"{cluster.job_id}-worker-1"]
    assert atl.cluster_resources()["CPU"] >= 2
    assert atl.job_info()["mode"] == "driver"


def test_remote_functions_run_on_workers_by_value(cluster):
    base = 10

    @atl.remote
    def where(x, scale=1):
        import os
        return os.environ["ATL_POD_NAME"], square(x) * scale + base

    pg = atl.placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_SPREAD")
    pg.ready(timeout=30)
    assert len(set(pg.bundle_nodes)) == 2
    refs = [where.options(placement_group=pg, placement_group_bundle_index=i).remote(i + 2,
                                                                                     scale=3)
            for i in range(2)]
    results = atl.get(refs, timeout=60)
    assert [r[1] for r in results] == [22, 37]
    assert [r[0] for r in results] == pg.bundle_nodes
    with pytest.raises(TypeError):
        where(1)


def test_a_remote_exception_is_raised_in_the_driver(cluster):
    @atl.remote
    def boom():
        raise ValueError("no such thing")

    with pytest.raises(atl.RemoteError) as e:
        atl.get(boom.remote(), timeout=60)
    assert e.value.remote_type == "ValueError"
    assert "no such thing" in str(e.value)


class QuotaExceeded(Exception):
    """A user's own exception with an attribute (module level: importable on the pods)."""

    def __init__(self, used, limit):
        super().__init__(f"{used} of {limit}")
        self.used, self.limit = used, limit


def test_num_returns_gives_a_ref_per_value(cluster):
    @atl.remote(num_returns=3)
    def split(x):
        return x, x * 2, x * 3

    for task in (split, split.options(pod=f"{cluster.job_id}-worker-0")):  # warm and cold
        refs = task.remote(5)
        assert isinstance(refs, list) and len(refs) == 3
        assert atl.get(refs, timeout=60) == [5, 10, 15]
        assert atl.get(refs[2], timeout=60) == 15
        ready, _ = atl.wait(refs, num_returns=3, timeout=60)
        assert len(ready) == 3

    # A remote function another one calls keeps its checked options there
    # (atl's own form of them: "SPREAD" is no option name).
    spread_split = split.options(scheduling_strategy="SPREAD")

    @atl.remote
    def outer():
        import atl as inner_atl
        inner_atl.init()
        return inner_atl.get(spread_split.remote(2), timeout=60)

    assert atl.get(outer.options(pod=f"{cluster.job_id}-worker-1").remote(), timeout=120) == \
        [2, 4, 6]

    @atl.remote(num_returns=2)
    def one():
        return 1

    with pytest.raises(ValueError) as e:
        atl.get(one.remote()[0], timeout=60)
    assert "not the 2 values num_returns=2 asks for" in str(e.value)


def test_scheduling_strategies_spread_and_a_groups_bundles_in_turn(cluster):
    from atl.util import placement_group, remove_placement_group
    from atl.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    @atl.remote
    def where():
        return os.environ["ATL_POD_NAME"]

    spread = where.options(scheduling_strategy="SPREAD")
    pods = atl.get([spread.remote() for _ in range(4)], timeout=120)
    workers = sorted({f"{cluster.job_id}-worker-0", f"{cluster.job_id}-worker-1"})
    assert sorted(set(pods)) == workers and pods[0] != pods[1], pods
    pg = placement_group([{"CPU": 1}] * 2, strategy="STRICT_SPREAD")
    pg.ready(timeout=60)
    try:
        anywhere = where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg))
        got = atl.get([anywhere.remote() for _ in range(2)], timeout=120)
        assert sorted(got) == sorted(pg.bundle_nodes), (got, pg.bundle_nodes)
        second = where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 1))
        assert atl.get(second.remote(), timeout=60) == pg.bundle_nodes[1]
    finally:
        remove_placement_group(pg)


def test_get_without_a_timeout_waits_past_its_pieces(cluster):
    @atl.remote
    def slow():
        time.sleep(2.5)
        return "done"

    # A process of its own (task_result's path), asked in 1 s pieces.
    assert atl.get(slow.options(pod=f"{cluster.job_id}-worker-0").remote()) == "done"


def test_a_remote_exception_is_raised_as_its_own_type_everywhere(cluster):
    @atl.remote
    def fail(kind):
        if kind == "value":
            raise ValueError("bad value")
        if kind == "key":
            raise KeyError("missing")
        raise QuotaExceeded(7, 5)

    cold = fail.options(pod=f"{cluster.job_id}-worker-1")
    for task in (fail, cold):  # a warm process, and a process of its own
        with pytest.raises(ValueError) as e:
            atl.get(task.remote("value"), timeout=60)
        assert isinstance(e.value, atl.TaskError) and isinstance(e.value, atl.RemoteError)
        assert e.value.remote_type == "ValueError" and "bad value" in str(e.value)
        assert "raise ValueError" in e.value.remote_traceback
        assert isinstance(e.value.cause, ValueError) and e.value.cause.args == ("bad value",)
        with pytest.raises(KeyError):
            atl.get(task.remote("key"), timeout=60)
        with pytest.raises(QuotaExceeded) as q:
            atl.get(task.remote("quota"), timeout=60)
        assert (q.value.used, q.value.limit) == (7, 5)  # its own attributes
        assert type(q.value).__name__ == "TaskError(QuotaExceeded)"

    @atl.remote
    class Account:
        def __init__(self, limit):
            if limit < 0:
                raise ValueError("negative limit")
            self.limit = limit

        def spend(self, n):
            if n > self.limit:
                raise QuotaExceeded(n, self.limit)
            return n

    # A constructor's error: as Ray's, its actor is dead and its calls say
    # why (ActorDiedError), the error itself their cause.
    with pytest.raises(atl.ActorDiedError) as died:
        atl.get(Account.remote(-1).spend.remote(1), timeout=30)
    assert isinstance(died.value.cause, ValueError), died.value
    a = Account.remote(3)
    assert atl.get(a.spend.remote(2), timeout=30) == 2
    with pytest.raises(QuotaExceeded) as q:
        atl.get(a.spend.remote(9), timeout=30)
    assert q.value.limit == 3


def test_placement_pends_saying_why_and_fails_at_its_deadline(cluster):
    pg = atl.placement_group([{"CPU": 1000}], timeout=0.3)
    with pytest.raises(atl.AtlError) as e:
        pg.ready(timeout=10)
    assert "not placed by its deadline" in str(e.value)
    assert "CPU" in str(e.value) and "free" in str(e.value)
    waiting = atl.placement_group([{"CPU": 1000}])
    assert waiting.wait(0.2) is False
    waiting.remove()
    with pytest.raises(atl.UsageError):
        atl.placement_group([{"CPU": 1}], strategy="SIDEWAYS")


def test_commands_stream_and_are_killed(cluster):
    t = atl.run("for i in 1 2 3; do echo tick $i; sleep 0.2; done; exit 4")
    assert t.wait(timeout=30) == 4
    assert t.output() == "tick 1\ntick 2\ntick 3\n"
    sleeper = atl.run("exec sleep 600", env={"A": "1"})
    with pytest.raises(atl.GetTimeoutError):
        sleeper.wait(timeout=0.2)
    sleeper.kill()
    assert sleeper.wait(timeout=30) == -15


def test_wait_returns_the_first_done(cluster):
    @atl.remote
    def nap(s):
        import time
        time.sleep(s)
        return s

    refs = [nap.remote(5), nap.remote(0)]
    ready, not_ready = atl.wait(refs, num_returns=1, timeout=30)
    assert ready == [refs[1]] and not_ready == [refs[0]]
    atl.cancel(refs[0])


def pid_and_pod():
    return os.getpid(), os.environ["ATL_POD_NAME"]


def test_warm_workers_run_calls_and_one_that_dies_is_replaced(cluster):
    @atl.remote
    def where(i):
        return pid_and_pod() + (i,)

    out = atl.get([where.remote(i) for i in range(40)], timeout=60)
    assert [i for _, _, i in out] == list(range(40))
    # A process is its pod and its pid there (each local pod may number its own).
    pids = {(pid, pod) for pid, pod, _ in out}
    # Two workers with at least one CPU each: 2..16 warm processes, each reused.
    assert 1 <= len(pids) <= 16 and len(pids) < 40, pids
    assert {pod for _, pod, _ in out} <= {f"{cluster.job_id}-worker-0",
                                          f"{cluster.job_id}-worker-1"}

    @atl.remote
    def die():
        os._exit(3)

    with pytest.raises(atl.RemoteError) as e:
        atl.get(die.remote(), timeout=60)
    assert "died while it ran" in str(e.value)
    # The pool goes on (a new process in the dead one's place).
    assert len(atl.get([where.remote(i) for i in range(8)], timeout=60)) == 8

    # A remote function calls another (atl.init() is a no-op in a warm process);
    # the inner call runs cold: workers start no pools of their own.
    @atl.remote
    def outer(x):
        import atl as inner_atl
        inner_atl.init()
        return inner_atl.get(where.remote(x), timeout=60)[:2], pid_and_pod()

    inner, outer_one = atl.get(outer.remote(7), timeout=120)
    assert tuple(inner) != tuple(outer_one)

    # With a placement of its own, a call runs cold: a process of its own.
    pod = f"{cluster.job_id}-worker-1"
    cold = atl.get([where.options(pod=pod).remote(i) for i in range(2)], timeout=60)
    assert cold[0][0] != cold[1][0] and not {c[:2] for c in cold} & pids
    assert {c[1] for c in cold} == {pod}


def test_cancel_drops_a_waiting_call_and_kills_a_running_one(cluster):
    @atl.remote
    def nap(s):
        import time
        time.sleep(s)
        return s

    # More naps than warm processes: some wait in the driver.
    refs = [nap.remote(600) for _ in range(20)]
    for ref in refs:
        atl.cancel(ref)
    for ref in refs:
        with pytest.raises(atl.RemoteError) as e:
            atl.get(ref, timeout=60)
        assert "cancelled" in str(e.value)
    assert atl.get(nap.remote(0), timeout=60) == 0
    with pytest.raises(atl.UsageError):
        atl.cancel("not a ref")


def test_actors_start_in_warm_workers_and_constructor_errors_are_raised_by_their_calls(cluster):
    @atl.remote
    class Box:
        def __init__(self, value):
            if value < 0:
                raise ValueError("negative")
            self.value = value

        def get(self):
            return self.value, pid_and_pod()

    # Started cold (a process of its own on that pod) and warm alike. As
    # Ray's: the actor is dead from the start, each call says why.
    dead = Box.options(pod=f"{cluster.job_id}-worker-0").remote(-1)
    with pytest.raises(atl.ActorDiedError) as e:
        atl.get(dead.get.remote(), timeout=30)
    assert "creation task" in str(e.value) and "negative" in str(e.value), str(e.value)
    assert isinstance(e.value.cause, ValueError)
    pool = atl._warm_pool()
    deadline = time.time() + 60
    while pool.idle() < 2 and time.time() < deadline:
        time.sleep(0.05)
    assert pool.idle() >= 2
    dead = Box.remote(-1)
    with pytest.raises(atl.ActorDiedError, match="negative"):
        atl.get(dead.get.remote(), timeout=30)
    atl.kill(dead)  # nothing to end: as Ray's, fine
    assert pool.idle() >= 2  # the process it was tried in went back
    boxes = [Box.remote(i) for i in range(3)]
    got = [atl.get(b.get.remote(), timeout=30) for b in boxes]
    assert [v for v, _ in got] == [0, 1, 2]
    assert len({tuple(p) for _, p in got}) == 3  # a process each
    for b in boxes:
        atl.kill(b)
        # Warm: ends at SIGTERM (143); cold (none was idle): closes and exits 0.
        assert b._task.wait(timeout=30) in (0, 143, -15)


def test_workers_per_node_zero_runs_every_call_cold(cluster):
    atl.shutdown()
    with pytest.raises(atl.UsageError):
        atl.init(cluster.address, cluster.tls, workers_per_node=-1)
    atl.init(cluster.address, cluster.tls, workers_per_node=0)

    @atl.remote
    def pid():
        return pid_and_pod()

    assert len({tuple(p) for p in atl.get([pid.remote() for _ in range(3)], timeout=60)}) == 3
    atl.shutdown()
    os.environ["ATL_WORKERS_PER_NODE"] = "many"
    try:
        with pytest.raises(atl.UsageError) as e:
            atl.init(cluster.address, cluster.tls)
        assert "ATL_WORKERS_PER_NODE" in str(e.value)
    finally:
        del os.environ["ATL_WORKERS_PER_NODE"]


def test_not_initialized_and_unreachable():
    atl.shutdown()
    with pytest.raises(atl.UsageError):
        atl.nodes()
    with pytest.raises(atl.UnreachableError):
        atl.init("127.0.0.1:1", insecure=True)
    assert not atl.is_initialized()


def test_a_head_that_does_not_answer_is_said_in_words():
    # A frozen head: the request's timeout, said as such, never CAF's
    # "system_error(request_timeout)".
    import signal
    c = Cluster(1)
    try:
        assert c.wait_for("initializing -> command"), c.output()
        atl.init(c.address, c.tls)
        os.kill(c.head.pid, signal.SIGSTOP)
        try:
            with pytest.raises(atl.UnreachableError) as e:
                atl.job_info()
        finally:
            os.kill(c.head.pid, signal.SIGCONT)
        assert "did not answer: it timed out" in str(e.value), str(e.value)
        assert "system_error" not in str(e.value), str(e.value)
    finally:
        atl.shutdown()
        c.stop()


def test_the_example_driver_runs_as_a_job():
    c = Cluster(2, entrypoint=f"{sys.executable} {ROOT}/examples/driver/spread.py")
    try:
        assert c.wait_exit(120) == 0, c.output()
        out = c.output()
        assert "[driver] gathered 8 results from 2 workers" in out, out
    finally:
        c.stop()


def test_the_ddp_driver_starts_torch_ranks_in_strict_spread_bundles():
    pytest.importorskip("torch")
    c = Cluster(2, entrypoint=f"{sys.executable} {ROOT}/examples/driver/ddp_cpu.py")
    try:
        assert c.wait_exit(300) == 0, c.output()
        out = c.output()
        assert "[driver] ranks ended with [0, 0]" in out, out
        assert "rank 1> rank 1/2: allreduce sum 3 (expected 3)" in out, out
    finally:
        c.stop()


def test_the_ddp_driver_stops_the_other_ranks_when_one_fails(tmp_path):
    # Rank 0 fails before it serves the rendezvous (its port taken, say): rank 1
    # waits in init_process_group for torch's 30 minutes unless it is stopped.
    pytest.importorskip("torch")
    script = tmp_path / "fails_first.py"
    script.write_text(
        "import os, sys\n"
        "if os.environ['RANK'] == '0':\n"
        "    sys.exit('rank 0: the master port is taken')\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n")
    c = Cluster(2, entrypoint=f"{sys.executable} {ROOT}/examples/driver/ddp_cpu.py {script}")
    try:
        assert c.wait_exit(120) == 1, c.output()
        out = c.output()
        assert "rank 0 ended with 1: stopping the other ranks" in out, out
        assert "ranks ended with [1, -" in out or "ranks ended with [1, 1" in out, out
    finally:
        c.stop()


def test_atlctl_status_shows_reservations_groups_and_demand(cluster):
    held = atl.placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_SPREAD", name="held")
    held.ready(timeout=30)
    waiting = atl.placement_group([{"CPU": 500}])
    env = dict(os.environ, ATL_TLS_DIR=cluster.tls)
    out = subprocess.run([os.path.join(BIN, "atlctl"), "--address", cluster.address, "status",
                          "-v"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Resources (reserved/total):" in text, text
    assert f"{cluster.job_id}-worker-0" in text and "CPU 1/" in text, text
    assert "STRICT_SPREAD" in text and "CREATED" in text and "held" in text, text
    assert "PENDING" in text and "fits no node" in text, text
    assert 'Pending demand:\n  {"CPU":500.0}' in text, text
    waiting.remove()
    held.remove()


def test_named_actors_across_processes(cluster):
    host = atl.host_actor("py-echo", lambda data: b"echo:" + data)
    try:
        assert atl.get_actor("py-echo").call(b"hi") == b"echo:hi"
        with pytest.raises(atl.RefusedError):
            atl.host_actor("py-echo", lambda d: d)

        def broken(data):
            raise KeyError("nope")
        bad = atl.host_actor("py-broken", broken)
        with pytest.raises(atl.AtlError) as e:
            atl.get_actor("py-broken").call(b"x")
        assert "KeyError" in str(e.value)
        bad.close()
    finally:
        host.close()
    with pytest.raises(atl.GetTimeoutError):
        atl.get_actor("py-echo", timeout=0.1)
    # timeout=None is no deadline (it was 1 ms).
    slow = atl.host_actor("py-slow", lambda data: (time.sleep(0.3), b"late")[1])
    try:
        assert atl.get_actor("py-slow").call(b"x", timeout=None) == b"late"
    finally:
        slow.close()
    # As Ray's: an unknown name is a ValueError at once, not a wait.
    started = time.monotonic()
    with pytest.raises(ValueError) as e:
        atl.get_actor("nobody")
    assert "no actor named 'nobody' in this job" in str(e.value)
    assert time.monotonic() - started < 5


def test_remote_classes_are_actors_on_workers(cluster):
    @atl.remote
    class Counter:
        def __init__(self, start):
            self.n = start

        def add(self, k):
            import os
            self.n += k
            return self.n, os.environ["ATL_POD_NAME"]

        def fail(self):
            raise RuntimeError("as asked")

    pod = f"{cluster.job_id}-worker-1"
    counter = Counter.options(pod=pod, name="counter").remote(10)
    assert atl.get(counter.add.remote(5), timeout=30) == (15, pod)
    refs = [counter.add.remote(1) for _ in range(20)]
    assert sorted(v for v, _ in atl.get(refs, timeout=60))[-1] == 35
    with pytest.raises(atl.RemoteError) as e:
        atl.get(counter.fail.remote(), timeout=30)
    assert e.value.remote_type == "RuntimeError"
    # Another process calls it by name (here: atl.get_actor in this one).
    assert atl.get_actor("counter").call(pickle.dumps(("add", (0,), {}))) != b""
    atl.kill(counter)
    assert counter._task.wait(timeout=30) in (0, -15)


def test_a_pool_whose_processes_cannot_start_gives_up_and_calls_run_cold(cluster, monkeypatch):
    atl.shutdown()
    # Warm processes that end at once (the "interpreter" exits 1 before it answers).
    monkeypatch.setattr(sys, "executable", "/bin/false")
    atl.init(cluster.address, cluster.tls, workers_per_node=1)

    @atl.remote
    def pid():
        return pid_and_pod()

    ref = pid.remote()
    with pytest.raises(atl.RemoteError) as e:
        atl.get(ref, timeout=60)
    # Waiting in the pool, the call fails with the pool's reason; on a loaded
    # machine the pool may have given up before the call was made, and the
    # call ran cold with the same broken interpreter.
    assert ("ended before they answered" in str(e.value)
            or "ended with 1 and no result" in str(e.value)), e.value
    monkeypatch.undo()  # the real interpreter again
    # The pool gave up: calls now get a process each (cold) and work.
    assert atl._warm_pool() is None
    assert len({tuple(p) for p in atl.get([pid.remote() for _ in range(2)], timeout=60)}) == 2


def test_shutdown_from_another_thread_returns(tmp_path):
    # It never returned (the actor system held by the thread that made it),
    # so the driver, and the job, never ended.
    script = tmp_path / "driver.py"
    script.write_text(
        "import threading, atl\n"
        "atl.init()\n"
        "atl.nodes()\n"
        "t = threading.Thread(target=atl.shutdown)\n"
        "t.start()\n"
        "t.join(30)\n"
        "print('shutdown returned:', not t.is_alive(), flush=True)\n"
        "raise SystemExit(1 if t.is_alive() else 0)\n")
    c = Cluster(1, entrypoint=f"{sys.executable} {script}")
    try:
        assert c.wait_exit(120) == 0, c.output()
        assert "[driver] shutdown returned: True" in c.output(), c.output()
    finally:
        c.stop()


def _run_client_script(cluster, tmp_path, body, *args):
    """`body` in a Python of its own (a crash there fails this test, not the run)."""
    script = tmp_path / "client.py"
    script.write_text("import sys, threading, time\nfrom atl import _capi\n"
                      "address, tls = sys.argv[1], sys.argv[2]\n" + textwrap.dedent(body))
    env = dict(cluster.env, ATL_LIBRARY=os.environ.get(
        "ATL_LIBRARY", os.path.join(os.path.dirname(BIN), "lib", "libatl.so")))
    return subprocess.run([sys.executable, str(script), cluster.address, cluster.tls,
                           *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_call_about_to_enter_libatl_never_finds_its_client_freed(cluster, tmp_path):
    # CI: a driver's pool thread had taken the client's handle when
    # shutdown() freed it, then entered libatl (a segfault). Here a call is
    # held after it started (converting its timeout) while another thread
    # closes the client: it must be refused before libatl, or the close must
    # wait for it; never may the close return first and the call then reach C.
    r = _run_client_script(cluster, tmp_path, """
        client = _capi.Client(address, tls)
        tid = client.task_start("exec sleep 600")
        stalled, closed, order = threading.Event(), threading.Event(), []

        class SlowTimeout:
            def __int__(self):
                stalled.set()
                closed.wait(5)  # the close returns first, unless it waits for this call
                return 100

        def call():
            try:
                client.task_wait(tid, SlowTimeout())
                order.append("call returned")
            except _capi.AtlError as e:
                order.append(f"call: {type(e).__name__}: {e}")

        t = threading.Thread(target=call)
        t.start()
        assert stalled.wait(30)
        client.close()
        order.append("close returned")
        closed.set()
        t.join(30)
        print(order)
        refused_before_c = order[1:] == ["call: UsageError: atl is not connected (atl.init() first)"]
        close_waited = len(order) == 2 and order[1] == "close returned"
        raise SystemExit(0 if refused_before_c or close_waited else 1)
        """)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])


def test_calls_parked_on_many_threads_end_cleanly_when_the_client_closes(cluster, tmp_path):
    # Threads in task_wait (parked at the supervisor) and in quick calls when
    # close() comes, then a new client at once (whose memory may be the old
    # one's): each call ends with an error naming the close, none crashes.
    r = _run_client_script(cluster, tmp_path, """
        rounds, threads = int(sys.argv[3]), int(sys.argv[4])
        first = _capi.Client(address, tls)
        tid = first.task_start("exec sleep 600")
        first.close()
        errors = set()
        for r in range(rounds):
            client = _capi.Client(address, tls)
            go = threading.Barrier(threads + 1)

            def worker(i):
                go.wait()
                try:
                    while True:
                        client.task_wait(tid, 20000) if i % 2 else client.job_info()
                except _capi.AtlError as e:
                    errors.add(str(e).replace("atl_job_info", "CALL").replace(
                        "atl_task_wait", "CALL"))

            ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
            for t in ts:
                t.start()
            go.wait()
            time.sleep(0.01 * (r % 5))
            client.close()
            for t in ts:
                t.join(60)
            assert not any(t.is_alive() for t in ts), "a call outlived close()"
        print(sorted(errors))
        assert errors <= {"atl is not connected (atl.init() first)",
                          "CALL: the client disconnected (atl_disconnect)"}, errors
        """, 12, 8)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])


def test_get_refuses_what_is_not_a_ref(cluster):
    # atl.get('garbage') raised AttributeError from deep inside.
    for bad in ("garbage", 5, ["x"], [None]):
        with pytest.raises(atl.UsageError) as e:
            atl.get(bad)
        assert "atl.get" in str(e.value)
    with pytest.raises(atl.UsageError):
        atl.get([], timeout="soon")


def test_tasks_answer_their_end_their_result_and_a_dropped_record():
    """task_start and task_wait answer typed statuses: the exit code, the
    signal, a result, why a task failed; a task beyond the kept history says
    its record was dropped (code failed), an id never started is a usage error."""
    c = Cluster(1, extra=("--history", "2"))
    try:
        assert c.wait_for("initializing -> command"), c.output()
        from atl._capi import FAILED, USAGE, AtlError, Client
        client = Client(c.address, c.tls)
        try:
            first = client.task_start("exit 3")
            assert client.task_wait(first, 60000) == (3, 0)
            killed = client.task_start("kill -TERM $$")
            assert client.task_wait(killed, 60000)[1] == 15  # its signal
            ok = client.task_start("echo result 42 >&$ATL_CONTROL_FD")
            assert client.task_result(ok, 60000) == "42"
            with pytest.raises(AtlError) as dropped:  # the 4th end drops the 1st and 2nd
                client.task_start("true")
                client.task_wait(first, 1000)
            assert dropped.value.code == FAILED, dropped.value
            assert "task %d ended and its record was dropped" % first in str(dropped.value)
            with pytest.raises(AtlError) as unknown:
                client.task_wait(999, 0)
            assert unknown.value.code == USAGE and "no task 999" in str(unknown.value)
        finally:
            client.close()
    finally:
        c.stop()


def test_progress_touches_the_file_atl_gives_the_rank(tmp_path, monkeypatch):
    monkeypatch.delenv("ATL_PROGRESS_FILE", raising=False)
    assert atl.progress() is False  # not run by atl: nothing to tell
    path = tmp_path / "progress"
    monkeypatch.setenv("ATL_PROGRESS_FILE", str(path))
    assert atl.progress() is True
    assert path.exists()
    before = path.stat().st_mtime_ns
    time.sleep(0.01)
    assert atl.progress() is True
    assert path.stat().st_mtime_ns > before


def test_a_removal_goes_in_the_background_and_its_error_reaches_the_driver(cluster):
    pg = atl.placement_group([{"CPU": 0.5}])
    pg.ready(timeout=30)
    pg.remove(wait=True)
    assert atl.available_resources()["CPU"] == atl.cluster_resources()["CPU"]
    with pytest.raises(atl.AtlError, match=f"removing placement group {pg.id}"):
        pg.remove(wait=True)  # twice: the supervisor's refusal comes back here
    pg.remove()  # and without waiting: the next placement call raises it
    _removals = atl._removals
    deadline = time.monotonic() + 30
    while _removals._failed is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(atl.AtlError, match=f"removing placement group {pg.id}"):
        atl.placement_group([{"CPU": 0.1}])
    atl.placement_group([{"CPU": 0.1}]).remove(wait=True)  # raised once, then gone


def test_wait_blocks_on_calls_and_tasks_without_polling(cluster):
    @atl.remote
    def nap(seconds):
        time.sleep(seconds)
        return seconds

    pod = atl.nodes()[0]["pod"]
    refs = [nap.remote(30), nap.options(pod=pod).remote(0.2), nap.remote(0.1)]
    ready, not_ready = atl.wait(refs, num_returns=2, timeout=60)
    assert ready == [refs[1], refs[2]] and not_ready == [refs[0]]
    ready, not_ready = atl.wait(refs, num_returns=3, timeout=0.3)  # the 30 s one: not yet
    assert len(ready) == 2 and not_ready == [refs[0]]
    atl.cancel(refs[0])
    with pytest.raises(atl.UsageError, match="num_returns=4"):
        atl.wait(refs, num_returns=4)
    with pytest.raises(atl.UsageError, match="item 1"):
        atl.wait([refs[1], "x"])
