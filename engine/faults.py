"""Named kill points: where a crash-safety test kills a run, on purpose.

A step's run passes named commit points (:class:`KillPoint`). Nothing
happens there unless the environment variable ``SPLICE_KILL_AT`` names the
point and the step, as ``point@step`` (``point@*`` for the first step that
reaches it). Then the run dies at once, the way ``kill -9`` would end it:
every process the run started (Spark's JVM, its Python workers) and the run
itself get SIGKILL, with no clean-up, no ``finally`` and no shutdown hook.

Only tests and ``bench/kill_loop.py`` set the variable; a run without it
pays one dictionary look-up per point.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

ENV = "SPLICE_KILL_AT"


class KillPoint(StrEnum):
    # A file source's ingest commit is made, its dead-letter append is not.
    SOURCE_INGESTED = "source-ingested"
    # A step's output commit (append, MERGE or a custom writer's last
    # commit) is made; the streaming checkpoint's commit for that
    # micro-batch is not.
    OUTPUT_COMMITTED = "output-committed"
    # A MERGE into a step's table is writing its new data files; its Delta
    # commit is not made.
    INSIDE_MERGE = "inside-merge"
    # A Kafka sink's records of a micro-batch are produced inside its Kafka
    # transaction (exactly_once_v2); the transaction is not committed.
    SINK_SENDING = "sink-sending"
    # A Kafka sink's records of a micro-batch are acknowledged by the
    # broker (exactly_once_v2: their transaction is committed); the sink's
    # own table (the records it sent) is not written.
    SINK_SENT = "sink-sent"
    # A Kafka source's micro-batch has written the ranges of records the
    # broker deleted unread to its dead letter (kafka_lost_records=skip);
    # the micro-batch's rows are not written.
    LOST_RECORDED = "lost-recorded"
    # A step that reads a Kafka source in place finished its query (its
    # checkpoint commits are made); the dead letters of the bad records its
    # micro-batches skipped are not written.
    READ_IN_PLACE = "read-in-place"
    # The step's streaming query finished (its checkpoint commits are
    # made); the run's own bookkeeping (input markers, definition hash) is
    # not written.
    CHECKPOINT_COMMITTED = "checkpoint-committed"


def armed(point: KillPoint, step_id: str) -> bool:
    """Whether ``SPLICE_KILL_AT`` asks to die at ``point`` of ``step_id``."""
    return _asks(os.environ.get(ENV), point, step_id)


def _asks(spec: str | None, point: KillPoint, step_id: str) -> bool:
    if not spec:
        return False
    wanted, _, step = spec.partition("@")
    return wanted == point.value and step in ("*", step_id)


@dataclass(frozen=True)
class Arming:
    """What a run armed (``SPLICE_KILL_AT``) and its pid, carried by a
    function the run hands to another process of the same host: under
    Spark Connect a step's foreachBatch function runs in the server's
    Python worker, whose environment is the server's, not the run's."""

    spec: str
    run: int


def arming() -> Arming | None:
    """This run's arming, for a function that runs elsewhere; None when
    nothing is armed."""
    spec = os.environ.get(ENV)
    return Arming(spec, os.getpid()) if spec else None


# The arming a run handed to this process for the micro-batch it is writing
# here (``carried_here``); None outside one.
_carried: Arming | None = None


@contextlib.contextmanager
def carried_here(carried: Arming | None) -> Iterator[None]:
    """Inside, every kill point of this process (``reached``, the filter of
    ``merge_killer``) answers to ``carried``, the arming of the run whose
    micro-batch this process writes (the server's foreachBatch worker under
    Spark Connect): the points deep in the writers fire there as they do in
    the run's own process. Only for the time of the micro-batch: a worker
    the server reuses for another run's query is not armed by this one."""
    global _carried
    before, _carried = _carried, carried
    try:
        yield
    finally:
        _carried = before


def reached(point: KillPoint, step_id: str) -> None:
    """A run of ``step_id`` is at ``point``: die here if the test asked so.
    Inside :func:`carried_here` (in a process the run does not own: the
    server's worker under Spark Connect), the run and this process die: the
    run is killed as ``kill -9`` would, and the server's query loses the
    worker that was writing its micro-batch, as when the run's own JVM
    dies; the server itself goes on."""
    carried = _carried
    if carried is None:
        if armed(point, step_id):
            kill_tree(os.getpid())
        paused(point, step_id)
        return
    if _asks(carried.spec, point, step_id):
        kill_tree(carried.run)
        os.kill(os.getpid(), signal.SIGKILL)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux' /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces.
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def kill_tree(root: int) -> None:
    """SIGKILL ``root`` and every process below it, the deepest first, so that
    none of them runs another instruction of the run (a JVM left alive
    would go on with the streaming query). Does not return when the caller
    is in the tree."""
    order: list[int] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        order.append(pid)
        pending.extend(_children(pid))
    me = os.getpid()
    for pid in reversed(order):
        if pid != me:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if me in order:
        os.kill(me, signal.SIGKILL)


def merge_killer(step_id: str):
    """A Column to filter a MERGE's source rows with, when the run must die
    inside that MERGE; None otherwise.

    The filter is a Python UDF that kills the run (from Spark's Python
    worker, the driver's process tree) when it is evaluated by a task of
    the MERGE's write phase: Delta names that phase's jobs 'Writing
    modified data'. Its data files are then being written and its commit
    is not made. For the UDF to be evaluated in that phase, the caller
    turns Delta's materialization of the MERGE's source off in the armed
    run (``spark.databricks.delta.merge.materializeSource=none``) and
    hands it the source as plain rows, free of cached plans (Delta refuses a
    source whose cached parts change while the MERGE runs).

    Inside :func:`carried_here` (the server's foreachBatch worker under
    Spark Connect, whose Python workers evaluate the filter) it kills the
    run that carried the arming, the foreachBatch worker and itself: the
    server's MERGE loses its task and is not committed, the server goes
    on."""
    carried = _carried
    if not (_asks(carried.spec, KillPoint.INSIDE_MERGE, step_id) if carried
            else armed(KillPoint.INSIDE_MERGE, step_id)):
        return None
    from pyspark import TaskContext
    from pyspark.sql import functions as F

    # Under Connect the run's process tree first, then the worker that
    # holds the micro-batch; in a run's own process tree, the run.
    doomed = (carried.run, os.getpid()) if carried else (os.getpid(),)

    @F.udf("boolean")
    def kill_in_write_phase(_: object) -> bool:
        context = TaskContext.get()
        description = (context.getLocalProperty("spark.job.description") or "") if context else ""
        if "writing" in description.lower():  # "Writing modified data", "writing new files"
            for root in doomed:
                kill_tree(root)
            os.kill(os.getpid(), signal.SIGKILL)  # a UDF worker outside those trees
        return True

    return kill_in_write_phase(F.lit(1))


# Injected failures and pauses: like the kill points, inert unless a test
# sets their variable.
RENEWAL_FAULT_ENV = "SPLICE_FAIL_LEASE_RENEWALS"
PAUSE_ENV = "SPLICE_PAUSE_AT"
PAUSE_FILE_ENV = "SPLICE_PAUSE_FILE"
PAUSE_LIMIT_SECONDS = 300.0


class InjectedFault(OSError):
    """A failure a test asked for (an outage of the store, at one place)."""


def renewal_fault(attempt: int) -> None:
    """Fail a lease's ``attempt``-th renewal if ``SPLICE_FAIL_LEASE_RENEWALS``
    asks so: ``all`` (every one), ``N`` (the first N) or ``after:N`` (every
    one after the N-th): an object store that goes away while a run holds
    its lease, at a known moment."""
    spec = os.environ.get(RENEWAL_FAULT_ENV, "").strip()
    if not spec:
        return
    if spec == "all" or (spec.isdigit() and attempt <= int(spec)) or (
            spec.startswith("after:") and attempt > int(spec.removeprefix("after:"))):
        raise InjectedFault(f"renewal {attempt} failed on purpose ({RENEWAL_FAULT_ENV}={spec})")


def paused(point: KillPoint, step_id: str) -> None:
    """Wait at ``point`` of ``step_id`` if ``SPLICE_PAUSE_AT`` names it (as
    ``SPLICE_KILL_AT`` does): write ``<SPLICE_PAUSE_FILE>.reached`` (this
    process' pid), then wait until ``SPLICE_PAUSE_FILE`` exists. A test
    holds a run there, in the middle of its writes and holding its lock, to
    start a rival run at a known moment."""
    if not _asks(os.environ.get(PAUSE_ENV), point, step_id):
        return
    flag = os.environ.get(PAUSE_FILE_ENV)
    if not flag:
        raise RuntimeError(f"{PAUSE_ENV} needs {PAUSE_FILE_ENV}")
    with open(f"{flag}.reached", "w") as fh:
        fh.write(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
    while not os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.05)
