"""Holding a pipeline while writing it: its claims, its lock, and a check
before every write.

Every writer of a pipeline (``splice run``, ``splice serve``, ``splice
test``, maintenance, a Dagster run) enters :func:`hold` before it writes:
it claims the pipeline's name and outputs (runtime/claims.py), takes the
pipeline's lock (runtime/lock.py: the OS lock on a local folder, a lease on
an object store) and keeps a :class:`Tenure` for as long as it writes.

A tenure can end before the writer is done: a lease that could not be
renewed in time, another holder's lease, a lock file removed, a claim
removed or taken by another pipeline. Then the writer must not write again:
every micro-batch's write and every bookkeeping write of the runner calls
:meth:`Tenure.check` first, and a watcher thread stops the step's streaming
queries as soon as it sees the loss (a micro-batch being written when the
lease's deadline comes is stopped, the deadline being a third of the lease
before anyone may take over). What was written stays whole: each
micro-batch's commit is idempotent and the checkpoint commits after it, so a
rerun continues where the stopped run ended, as after a kill.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from splice.engine.settings import Warehouse
from splice.runtime.claims import claim, unclaimed
from splice.runtime.lock import Holder, Lock, acquire, lease_seconds_from_env, lock_for
from splice.sql.plan import Pipeline

# How often the watcher looks at the lock, and at the claims.
WATCH_SECONDS = 0.5
CLAIMS_SECONDS = 5.0


class TenureLost(Exception):
    """A writer no longer holds its pipeline's lock or a claim; it stopped
    before its next write. The message says why and that a rerun is safe."""

    def __init__(self, pipeline: str, where: str, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"pipeline '{pipeline}' stopped: it no longer holds its lock ({where}): {reason}. "
            "It wrote nothing after that, and what it wrote is whole: run it again "
            "to continue where it stopped")


class Tenure:
    """One writer's hold on one pipeline (made by :func:`hold`)."""

    def __init__(self, pipeline: Pipeline, warehouse: Warehouse, lock: Lock, where: str,
                 holder: Holder) -> None:
        self.pipeline, self.warehouse, self.lock, self.where = pipeline, warehouse, lock, where
        self.holder = holder
        self._lost: str | None = None
        self._queries: list[Any] = []
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="splice-tenure", daemon=True)

    def reason(self) -> str | None:
        """Why the tenure ended; None while it holds."""
        if self._lost is None:
            why = self.lock.lost()
            if why is not None:
                self._lose(why)
        return self._lost

    def check(self) -> None:
        """Raise :class:`TenureLost` if the tenure ended (before a write)."""
        if self.reason() is not None:
            raise self.lost_error()

    def lost_error(self) -> TenureLost:
        return TenureLost(self.pipeline.name, self.where, self._lost or "")

    def watch(self, query: Any) -> None:
        """Stop ``query`` (a streaming query writing for this tenure) when the
        tenure ends; at once if it ended already."""
        with self._guard:
            self._queries = [q for q in self._queries if q.isActive]
            self._queries.append(query)
            lost = self._lost is not None
        if lost:
            _stop_quietly(query)

    def _lose(self, why: str) -> None:
        with self._guard:
            if self._lost is not None:
                return
            self._lost = why
            queries, self._queries = self._queries, []
        for query in queries:
            _stop_quietly(query)

    def _watch(self) -> None:
        claims_at = time.monotonic()
        while not self._stop.wait(WATCH_SECONDS):
            if self.reason() is not None:
                return
            if time.monotonic() - claims_at >= CLAIMS_SECONDS:
                claims_at = time.monotonic()
                try:
                    why = unclaimed(self.pipeline, self.warehouse)
                except Exception:  # the store is out: the lease's deadline decides
                    why = None
                if why is not None:
                    self._lose(why)
                    return

    def _start(self) -> None:
        self._watcher.start()

    def _close(self) -> None:
        self._stop.set()
        self._watcher.join()
        with self._guard:  # a finished query is not kept alive by its tenure
            self._queries = []


def _stop_quietly(query: Any) -> None:
    with contextlib.suppress(Exception):  # a query that ended by itself meanwhile
        query.stop()


# The tenures this process holds, by the pipeline's folder in its warehouse.
_held: dict[str, Tenure] = {}
_held_guard = threading.Lock()


def held(warehouse: Warehouse, pipeline: str) -> Tenure | None:
    """This process' tenure of ``pipeline`` on ``warehouse``, if it holds one."""
    with _held_guard:
        return _held.get(warehouse.pipeline_path(pipeline))


def check_held(warehouse: Warehouse, pipeline: str) -> None:
    """:meth:`Tenure.check` of the tenure this process holds, if any (a
    step run outside :func:`hold`, as the engine's own tests run them, has
    none to lose)."""
    tenure = held(warehouse, pipeline)
    if tenure is not None:
        tenure.check()


@contextlib.contextmanager
def hold(pipeline: Pipeline, warehouse: Warehouse, *, wait: float | None = None,
         owner: str | None = None, lease_seconds: float | None = None) -> Iterator[Tenure]:
    """Claim ``pipeline``'s names, take its lock (waiting ``wait`` seconds,
    None: as long as it takes; ``owner`` says who holds it) and hold both
    for the block. Raises ``ClaimRefused`` (nothing claimed), ``LockBusy``
    (the holder named) or, inside, :class:`TenureLost`."""
    if lease_seconds is None:  # a bad value stops the run before it writes anything
        lease_seconds = lease_seconds_from_env()
    # Claimed before the lock is taken: a refused pipeline leaves nothing
    # behind in the warehouse (claims are created only when absent).
    claim(pipeline, warehouse)
    lock, where = lock_for(warehouse, pipeline.name, lease_seconds)
    holder = acquire(lock, where, pipeline.name, wait, owner)
    tenure = Tenure(pipeline, warehouse, lock, where, holder)
    key = warehouse.pipeline_path(pipeline.name)
    with _held_guard:
        _held[key] = tenure
    tenure._start()
    try:
        yield tenure
    finally:
        tenure._close()
        with _held_guard:
            _held.pop(key, None)
        lock.release()
