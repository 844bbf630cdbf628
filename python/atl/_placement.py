"""Placement groups (Ray's: bundles of resources on the workers, by
strategy), and the one-bundle reservations a call with num_cpus/num_gpus/
memory/resources gets of its own."""
from __future__ import annotations

import json
import os
import threading
import time

from . import _refs
from . import _c, _ms, nodes
from ._capi import USAGE, AtlError, GetTimeoutError, UsageError
from ._errors import RemoteError
from ._refs import ObjectRef


_RAY_READY = object()  # pg.ready() with no timeout: Ray's ref


class PlacementGroup:
    """Reserved bundles of resources on the workers (Ray's semantics)."""

    def __init__(self, gid, bundles, strategy, table=None):
        self.id = gid
        self.bundle_specs = bundles
        self.strategy = strategy
        # Placed at once: ready() has nothing to wait for.
        self._table = table if table and table.get("state") == "CREATED" else None

    @property
    def bundle_count(self) -> int:
        return len(self.bundle_specs)

    def ready(self, timeout=_RAY_READY):
        """pg.ready(): an ObjectRef of the group once every bundle is reserved
        (Ray's: atl.get or atl.wait it). pg.ready(timeout=seconds) (None: no
        limit) waits here instead and returns the group: GetTimeoutError while
        still pending (the message says which bundle lacks what where),
        AtlError when it failed or was removed."""
        if timeout is _RAY_READY:
            future = _refs.new_future()

            def wait():
                try:
                    future.set_result(self.ready(None))
                except BaseException as e:
                    future.set_exception(e)
            threading.Thread(target=wait, daemon=True, name="atl-pg-ready").start()
            return ObjectRef(f"placement group {self.id} ready", _refs._Call(future))
        if self._table is not None:
            return self
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = 60.0 if left is None else min(left, 60.0)
            try:
                self._table = json.loads(_c().pg_wait(self.id, _ms(step) or 1))
                return self
            except GetTimeoutError:
                if left is not None and left <= step:
                    raise

    def wait(self, timeout_seconds: float = 30) -> bool:
        """True once placed, False if still pending after the timeout."""
        try:
            self.ready(timeout=timeout_seconds)
            return True
        except GetTimeoutError:
            return False

    @property
    def bundle_nodes(self) -> list[str]:
        """The pod of each bundle (after ready())."""
        if self._table is None:
            self.ready(timeout=0.001)
        return list(self._table["nodes"])

    def remove(self, wait: bool = False) -> None:
        """Frees the group's bundles (its tasks end). Sent in the background,
        in order, so a loop of create/remove does not wait for each removal;
        a removal's error is raised by this driver's next placement call (or
        here with wait=True, which returns once it is done)."""
        with _owned_lock:
            _owned.discard(self.id)
        done = _removals.put(self.id)
        _removals.raise_failed()
        if wait:
            done.result()
            _removals.raise_failed()

    def __eq__(self, other):
        return isinstance(other, PlacementGroup) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"PlacementGroup(id={self.id}, strategy={self.strategy}, bundles={self.bundle_specs})"


class _Removals:
    """Placement groups to remove, one after another on a thread of their
    own; the first error kept for the driver's next placement call."""

    def __init__(self):
        import queue
        self._queue = queue.Queue()
        self._thread = None
        self._failed = None
        self._lock = threading.Lock()

    def put(self, gid):
        done = _refs.new_future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="atl-pg-remove")
                self._thread.start()
        self._queue.put((gid, done))
        return done

    def _run(self):
        while True:
            gid, done = self._queue.get()
            try:
                _c().pg_remove(gid)
            except AtlError as e:
                with self._lock:
                    if self._failed is None:
                        self._failed = type(e)(e.code, f"removing placement group {gid}: {e}")
            done.set_result(None)

    def raise_failed(self):
        with self._lock:
            failed, self._failed = self._failed, None
        if failed is not None:
            raise failed


_removals = _Removals()


# The groups this driver made that end with it (Ray's: a job's placement
# groups are removed when its driver exits, but for lifetime="detached").
_owned = set()
_owned_lock = threading.Lock()


def placement_group(bundles: list[dict[str, float]], strategy: str = "PACK", name: str = "",
                    timeout: float | None = None, lifetime: str | None = None) -> PlacementGroup:
    """Asks for `bundles` (a list of {"CPU": 1, "GPU": 1, "memory": bytes,
    "custom": n}) placed by `strategy`: PACK, SPREAD, STRICT_PACK or
    STRICT_SPREAD. Returns at once; `.ready()` waits. A group still pending
    after `timeout` seconds fails (None: it waits for ever). An earlier
    removal's error is raised here. It is removed when this driver shuts
    down (atl.shutdown, or its exit), as Ray's, unless lifetime="detached"."""
    if lifetime not in (None, "detached"):
        raise UsageError(USAGE, f"placement_group: lifetime={lifetime!r}: expected None or "
                                f"\"detached\"")
    _removals.raise_failed()
    gid, table = _c().pg_create(name, strategy, json.dumps(list(bundles)), _ms(timeout))
    if lifetime is None:
        with _owned_lock:
            _owned.add(gid)
    else:  # the head removes what a driver made when it goes, but for this
        _c().disown(True, gid)
    return PlacementGroup(gid, list(bundles), strategy, json.loads(table) if table else None)


def _disown(pg):
    """`pg` outlives this driver (a detached actor's reservation): here, and
    at the head, which removes a driver's groups when its connection ends."""
    with _owned_lock:
        _owned.discard(pg.id)
    _c().disown(True, pg.id)


def _remove_owned():
    """What shutdown() does to this driver's groups that are not detached:
    removed now, one after another (the queued removals first)."""
    with _owned_lock:
        gids = sorted(_owned)
        _owned.clear()
    for gid in gids:
        try:
            _c().pg_remove(gid)
        except AtlError:
            pass  # removed already, or gone with its node


def remove_placement_group(pg: PlacementGroup) -> None:
    pg.remove()


def _table_row(g):
    return {"placement_group_id": g["id"], "name": g.get("name", ""),
            "bundles": {i: dict(b) for i, b in enumerate(g["bundles"])},
            "bundles_to_node_id": {i: n for i, n in enumerate(g.get("nodes") or []) if n},
            "strategy": g["strategy"], "state": g["state"]}


def placement_group_table(placement_group: PlacementGroup | None = None) -> dict:
    """As Ray's: the state of `placement_group` ({"placement_group_id",
    "name", "bundles", "bundles_to_node_id" (index -> pod), "strategy",
    "state": PENDING, CREATED or REMOVED}), or of every group of the job, by
    id. A group removed is not kept at the head: its row says REMOVED."""
    from . import cluster_state
    groups = {g["id"]: g for g in cluster_state().get("groups", [])}
    if placement_group is None:
        return {gid: _table_row(g) for gid, g in groups.items()}
    g = groups.get(placement_group.id)
    if g is None:
        g = {"id": placement_group.id, "bundles": placement_group.bundle_specs,
             "strategy": placement_group.strategy, "state": "REMOVED"}
    return _table_row(g)


def get_placement_group(placement_group_name: str) -> PlacementGroup:
    """The job's group named so (placement_group(name=...)), as Ray's;
    ValueError when there is none."""
    from . import cluster_state
    for g in cluster_state().get("groups", []):
        if g.get("name") and g["name"] == placement_group_name:
            return PlacementGroup(g["id"], [dict(b) for b in g["bundles"]], g["strategy"], g)
    raise ValueError(f"Failed to look up placement group with name: {placement_group_name} "
                     f"(the job has no group of that name)")


# A process started in a placement group (a task's, an actor's) knows it by
# this variable: get_current_placement_group(), and the child tasks its
# capture puts there.
PLACEMENT_GROUP_ENV = "ATL_PLACEMENT_GROUP"


def placement_env(o, bundle):
    """The variables of a process started with options `o` (in `bundle` of
    its group, if any): its group, when one of the user's (not a call's own
    reservation); what it holds (get_assigned_resources): its own demand,
    else its bundle's."""
    env = {}
    pg = o.get("placement_group")
    if pg:
        env[PLACEMENT_GROUP_ENV] = json.dumps({"id": pg.id, "bundles": pg.bundle_specs,
                                               "strategy": pg.strategy,
                                               "capture": bool(o.get("capture"))})
    held = o.get("demand") or (pg.bundle_specs[bundle] if pg and bundle is not None and
                               0 <= bundle < len(pg.bundle_specs) else None)
    if held:
        env["ATL_ASSIGNED_RESOURCES"] = json.dumps(held)
    return env


# (read once: a process's group is the one it was started in)
_CURRENT = json.loads(os.environ[PLACEMENT_GROUP_ENV]) if os.environ.get(PLACEMENT_GROUP_ENV) \
    else None


def _current():
    return _CURRENT


def get_current_placement_group() -> PlacementGroup | None:
    """As Ray's: the group this task or actor was started in; None in a
    driver, or in a process started in no group."""
    c = _current()
    return PlacementGroup(c["id"], c["bundles"], c["strategy"]) if c else None


def captured(o):
    """Options `o` of a call made in a process whose group captures its
    child tasks (placement_group_capture_child_tasks=True): with no place of
    their own, they go to that group's bundles in turn, as Ray's. None when
    the call's options stand as they are."""
    c = _current()
    if not c or not c["capture"] or any(o.get(k) for k in ("placement_group", "pod", "spread")):
        return None
    return dict(o, placement_group=PlacementGroup(c["id"], c["bundles"], c["strategy"]),
                placement_group_bundle_index=None, capture=True)


def _fits(need, have):
    return all(have.get(k, 0) >= v for k, v in need.items())


_totals = (0.0, [])  # (when asked, [(pod, its total)])
_TOTALS_TTL_S = 5.0


def _pod_totals(fresh=False):
    """Each pod's total, asked at most every few seconds: a job's pods are
    fixed, and asking the head for its whole state per call (every group it
    keeps) cost a call with num_cpus= more than the call."""
    global _totals
    asked, totals = _totals
    if fresh or time.monotonic() - asked > _TOTALS_TTL_S:
        totals = [(n["pod"], n["total"]) for n in nodes()]
        _totals = (time.monotonic(), totals)
    return totals


def _check_feasible(o, label):
    """A call's resource counts against what can ever hold them: a pod's
    total (every pod of the job, lost ones too), or its placement group's
    bundle. UsageError saying why when nothing can: such a call would wait
    for ever (Ray warns and waits; atl's pods are the job's, fixed)."""
    need = o["demand"]
    pg = o.get("placement_group")
    if pg is not None:
        index = o.get("placement_group_bundle_index")
        bundles = pg.bundle_specs if index is None else [pg.bundle_specs[index]]
        if not all(_fits(need, b) for b in bundles):
            raise UsageError(USAGE, f"{label}: {need} does not fit bundle "
                                    f"{'s' if index is None else index} of {pg!r}")
        return
    totals = _pod_totals()
    if not any(_fits(need, total) for _, total in totals):
        totals = _pod_totals(fresh=True)  # a pod may have joined since
    if not any(_fits(need, total) for _, total in totals):
        largest = ", ".join(f"{pod} has {total}" for pod, total in totals[:4]) or "no pod joined"
        raise UsageError(USAGE, f"{label}: no pod of this job can ever hold {need} "
                                f"(infeasible: {largest})")


def _reserve(need, source, label, timeout=None):
    """A one-bundle placement group holding `need`, once a pod can (PACK):
    the call's own reservation, removed when it ends. While it waits,
    source.why says what for (a get that times out says it)."""
    pg = placement_group([need], strategy="PACK")
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            if source is not None and source.cancelled:
                raise RemoteError(f"{label}: cancelled while it waited for {need}")
            step = 1.0 if deadline is None else max(0.001, min(1.0, deadline - time.monotonic()))
            try:
                pg.ready(timeout=step)
                return pg
            except GetTimeoutError as e:
                why = f"waiting for a pod that can hold {need}: {e}"
                if source is not None:
                    source.why = why
                if deadline is not None and time.monotonic() >= deadline:
                    raise GetTimeoutError(5, f"{label}: {why}") from None
    except BaseException:
        _remove_quietly(pg)
        raise


def _remove_quietly(pg):
    with _owned_lock:
        _owned.discard(pg.id)
    try:
        _removals.put(pg.id)
    except AtlError:
        pass  # the job is ending, or the group went with its node


class _Leases:
    """One-bundle reservations reused call after call, as Ray's workers are
    leased from its raylet: a call with num_cpus/memory/resources (no GPU, no
    place of its own) runs on an idle reservation of its shape, or on one
    reserved for it, and gives it back when it ends; one idle for IDLE_S is
    removed. A lease is held by one call at a time, so as many such calls
    run at once as the pods' free resources hold (Ray's "limit running
    tasks" pattern), as with a reservation per call, without its three
    round trips to the head (create, ready, remove) per call.

    Calls come two ways: queued (`run`: started in order by whoever frees a
    lease, no thread per call) or from a thread of their own (`take`: a call
    that waits for refs or retries)."""

    IDLE_S = 1.0
    RESERVING = 2  # reservations under way per shape at once

    class _Shape:
        def __init__(self, lock):
            import collections
            self.cv = threading.Condition(lock)  # a lease back, or room to reserve
            self.idle = []  # (group, since), the newest last
            self.queue = collections.deque()  # calls waiting to start: (start, fail)
            self.reserving = 0
            self.waiting = 0  # threads in take()

    def __init__(self):
        self._lock = threading.Lock()
        self._shapes = {}
        self._reaper = None
        self._epoch = 0  # a shutdown's: leases of an earlier connection are not kept

    def _shape(self, need):
        key = tuple(sorted(need.items()))
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._Shape(self._lock)
        return shape

    @property
    def epoch(self):
        with self._lock:
            return self._epoch

    # -- queued calls ------------------------------------------------------

    def run(self, need, start, fail):
        """start(group) once a lease is this call's (in order, per shape; on
        the thread that freed it: it must not block); fail(error) when no
        lease can come (the reservation failed, or the driver shut down)."""
        with self._lock:
            shape = self._shape(need)
            shape.queue.append((start, fail))
            pairs = self._pair(shape)
            reserve = self._reserver_due(shape)
        self._start(pairs)
        if reserve:
            threading.Thread(target=self._reserver, args=(need, shape), daemon=True,
                             name="atl-lease").start()

    def _pair(self, shape):
        pairs = []
        while shape.queue and shape.idle:
            pairs.append((shape.idle.pop()[0], shape.queue.popleft()[0]))
        return pairs

    def _reserver_due(self, shape):
        if shape.queue and shape.reserving < min(len(shape.queue), self.RESERVING):
            shape.reserving += 1
            return True
        return False

    _starting = threading.local()

    def _start(self, pairs):
        # Each start(group) may give a lease back at once (a call cancelled
        # while queued, a refused submit), which starts the next: done in
        # this loop, not by recursing once per queued call.
        pending = getattr(self._starting, "pending", None)
        if pending is not None:
            pending.extend(pairs)
            return
        self._starting.pending = pending = list(pairs)
        try:
            while pending:
                group, start = pending.pop(0)
                start(group)
        finally:
            self._starting.pending = None

    def _reserver(self, need, shape):
        # A reservation for the queue: handed to its head once placed, dropped
        # when the queue emptied meanwhile (leases came back).
        while True:
            epoch = self.epoch
            try:
                pg = self._place(need, shape, lambda: bool(shape.queue))
            except BaseException as e:
                with self._lock:
                    shape.reserving -= 1
                    failed = list(shape.queue)
                    shape.queue.clear()
                for _, fail in failed:
                    fail(e)
                return
            with self._lock:
                shape.reserving -= 1
                more = self._reserver_due(shape)
            if pg is not None:
                self.give(pg, need, True, epoch)
            if not more:
                return

    def _place(self, need, shape, wanted, source=None, label=None):
        """A new one-bundle group, placed; None when a lease came back
        first or nobody wants it any more (wanted() false)."""
        pg = placement_group([need], strategy="PACK")
        step = 0.02
        try:
            while True:
                if source is not None and source.cancelled:
                    raise RemoteError(f"{label}: cancelled while it waited for {need}")
                try:
                    return pg.ready(timeout=0.01)
                except GetTimeoutError as e:
                    if source is not None:
                        source.why = f"waiting for a pod that can hold {need}: {e}"
                # Woken by a lease given back (or, later and later, to ask
                # whether room came free elsewhere: another driver's end).
                with self._lock:
                    if shape.idle or not wanted():
                        break
                    shape.cv.wait(step)
                    if shape.idle or not wanted():
                        break
                step = min(1.0, step * 2)
        except BaseException:
            _remove_quietly(pg)
            raise
        _remove_quietly(pg)
        return None

    # -- calls from threads of their own -----------------------------------

    def take(self, need, source, label):
        """A placed one-bundle group holding `need`, this call's until give()."""
        while True:
            with self._lock:
                shape = self._shape(need)
                shape.waiting += 1
                try:
                    while True:
                        if source is not None and source.cancelled:
                            raise RemoteError(f"{label}: cancelled while it waited for {need}")
                        if shape.idle:
                            return shape.idle.pop()[0]
                        if shape.reserving < min(shape.waiting, self.RESERVING):
                            shape.reserving += 1
                            break
                        if source is not None:
                            source.why = f"waiting for a pod that can hold {need}"
                        shape.cv.wait(0.5)
                finally:
                    shape.waiting -= 1
            try:
                pg = self._place(need, shape, lambda: True, source, label)
            finally:
                with self._lock:
                    shape.reserving -= 1
                    shape.cv.notify()  # another may reserve now
            if pg is not None:
                return pg
            # A lease came back meanwhile: take it (or wait again).

    # -- both ---------------------------------------------------------------

    def give(self, pg, need, healthy=True, epoch=None):
        """Back from a call: to the next queued call, kept for the next one,
        or removed (a call whose process or pod failed gives its lease up)."""
        pairs, reserve, shape = [], False, None
        with self._lock:
            shape = self._shape(need)
            if healthy and epoch == self._epoch:
                shape.idle.append((pg, time.monotonic()))
                pairs = self._pair(shape)
                if shape.idle:
                    shape.cv.notify()
                    if self._reaper is None:
                        self._reaper = threading.Thread(target=self._reap, daemon=True,
                                                        name="atl-leases")
                        self._reaper.start()
                pg = None
            else:
                reserve = self._reserver_due(shape)
        if pg is not None:
            _remove_quietly(pg)
        self._start(pairs)
        if reserve:
            threading.Thread(target=self._reserver, args=(need, shape), daemon=True,
                             name="atl-lease").start()

    def _reap(self):
        while True:
            time.sleep(self.IDLE_S / 4)
            now = time.monotonic()
            expired = []
            with self._lock:
                for shape in self._shapes.values():
                    expired += [g for g, since in shape.idle if now - since >= self.IDLE_S]
                    shape.idle[:] = [(g, t) for g, t in shape.idle if now - t < self.IDLE_S]
                done = not any(shape.idle for shape in self._shapes.values())
                if done:
                    self._reaper = None
            for pg in expired:
                _remove_quietly(pg)
            if done:
                return

    def clear(self):
        """At shutdown: nothing kept (the groups are the driver's own, removed
        with the others); a call still queued fails, saying so."""
        failed = []
        with self._lock:
            self._epoch += 1
            for shape in self._shapes.values():
                shape.idle.clear()
                failed += [fail for _, fail in shape.queue]
                shape.queue.clear()
                shape.cv.notify_all()
        for fail in failed:
            fail(RemoteError("the driver shut down (atl.shutdown) before the call started"))


_leases = _Leases()
