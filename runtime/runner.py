"""Running steps: every step is one incremental Structured Streaming run.

A step's query runs with ``trigger(availableNow=True)`` on the step's own
checkpoint: it processes what arrived since its last run, then stops, so the
next run continues where this one stopped. Every step, sources included, is
its physical node's query (built by the executor the registry names for the
node's kind) run through the one loop here. The CLI and the Dagster assets
both run steps through :func:`run_step`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from splice.engine import definitions, fs
from splice.engine.errors import Cause, explain, recorded, transient
from splice.engine.faults import KillPoint, arming, carried_here, reached
from splice.engine.io import (
    StepIO,
    app_id,
    append,
    delta_version,
    ensure_table,
    merge_by_key,
    notes_since,
    rows_written_since,
)
from splice.engine.maintenance import MaintenancePolicy, after_run
from splice.engine.nodes import PhysicalNode, PhysicalPlan
from splice.engine.progress import RunProgress, is_no_data_batch
from splice.engine.query import BatchTarget, Sink, StepQuery
from splice.engine.session import is_connect, own_session
from splice.operators.file_manifest import ChangedFile
from splice.operators.sources import SourceError
from splice.runtime.planner import planned
from splice.runtime.registry import bind, executor
from splice.runtime.tenure import check_held, held, hold
from splice.sql.plan import Kind, Pipeline, Step

_log = logging.getLogger("splice.runner")
# Runs of a step in all when its failures are transient (engine.errors).
ATTEMPTS = 5


@dataclass
class StepReport:
    """What one run of one step did."""

    step_id: str
    op: str
    kind: str
    path: str
    rows_written: int
    delta_version: int | None
    seconds: float
    schema: list[tuple[str, str]] = field(default_factory=list)
    dead_letters: int = 0
    late_dropped: int = 0
    skipped: bool = False
    # Rows a stateful step (a stream-stream join) keeps after this run.
    state_rows: int | None = None
    # Files of a file source changed in place after they were ingested: what
    # they gained was not read (reported on every run, never silent).
    changed_files: list[ChangedFile] = field(default_factory=list)
    # How the run wrote, when its step says (a table-table join: the plan
    # it chose and why), from its commits' notes (the last micro-batch's).
    plan: dict[str, object] | None = None
    # Why the step's query ran again within this run, once per retry.
    retried: list[str] = field(default_factory=list)

    def metadata(self) -> dict[str, object]:
        return {
            "rows_written": self.rows_written,
            "delta_version": self.delta_version if self.delta_version is not None else -1,
            "duration_s": round(self.seconds, 3),
            "path": self.path,
            "dead_letters": self.dead_letters,
            "late_records_dropped": self.late_dropped,
            "skipped_no_new_input": self.skipped,
            **({"state_rows": self.state_rows} if self.state_rows is not None else {}),
            **({"changed_files": len(self.changed_files)} if self.changed_files else {}),
            **({f"plan_{k}": v for k, v in self.plan.items()} if self.plan else {}),
            **({"retried": "; ".join(self.retried)} if self.retried else {}),
        }


class StepFailed(Exception):
    """A step's run failed; the message says which step and why, in words
    (one paragraph); ``detail`` holds the whole error text, for logs."""

    def __init__(self, step: Step, reason: str, detail: str | None = None) -> None:
        self.step = step
        self.detail = detail or reason
        super().__init__(f"step '{step.id}' ({step.op}, from {step.where}) failed: {reason}")


def input_markers(node: PhysicalNode, io: StepIO) -> dict[str, str]:
    """What the step's streamed inputs look like now (Delta versions, or the
    files of a file source: its executor says), with the step's own
    definition: a run may be skipped when none of it changed since the
    step's last run."""
    definition = hashlib.sha256(node.step.model_dump_json().encode()).hexdigest()
    markers = {"definition": definition, **executor(node).markers(node, io)}
    for source in read_in_place(node, io):  # its data, not a table it has not
        markers.update(executor(source).markers(source, io))
    return markers


def read_in_place(node: PhysicalNode, io: StepIO) -> list[PhysicalNode]:
    """The nodes of the sources ``node`` reads in place (``Pipeline.read_in_place``)."""
    plan = io.pipeline
    assert isinstance(plan, PhysicalPlan), "a bound StepIO holds the plan"
    return [plan.node(i) for i in plan.read_in_place(node.step.id)]


def settle_in_place(node: PhysicalNode, io: StepIO, observed: dict[int, dict[str, Any]]) -> int:
    """What the sources ``node`` reads in place owe for its committed
    micro-batches (their dead letters), written; how many."""
    return sum(executor(source).settle(source, io, node.step, observed)
               for source in read_in_place(node, io))


def _markers_file(step: Step, io: StepIO) -> str:
    return f"{io.checkpoint(step)}/splice_inputs.json"


def _unchanged(step: Step, io: StepIO, markers: dict[str, str]) -> bool:
    path = _markers_file(step, io)
    if not fs.exists(io.spark, path):
        return False
    try:  # an unreadable marker (a crash mid-write before writes were atomic) is no marker
        return json.loads(fs.read_text(io.spark, path)) == markers
    except (OSError, ValueError):
        return False


def run_step(step: Step, io: StepIO, checked: bool = False) -> StepReport:
    """Run one step once; a step none of whose streamed inputs changed since
    its last run has nothing to do, and is not started.

    A step whose SQL (or that of a step upstream) changed since its
    checkpoint was built is refused (:class:`definitions.DefinitionChanged`),
    unless ``checked`` says the caller checked the whole pipeline already."""
    start = time.monotonic()
    plan = planned(io.pipeline)
    io = bind(io, plan)
    node = plan.node(step.id)
    if not checked:
        definitions.check(plan, io, [step.id])
    markers = input_markers(node, io)
    if _unchanged(step, io, markers):
        path = io.table_path(step)
        return StepReport(step.id, step.op, step.kind.value, path, 0,
                          delta_version(io.spark, path), time.monotonic() - start,
                          skipped=True, changed_files=executor(node).skipped(node, io))
    check_held(io.warehouse, plan.name)
    definitions.record(io, step)
    report = _run(node, io, start)
    reached(KillPoint.CHECKPOINT_COMMITTED, step.id)
    check_held(io.warehouse, plan.name)  # a query its lost lock stopped ends quietly
    fs.write_text(io.spark, _markers_file(step, io), json.dumps(markers))
    return report


def _run(node: PhysicalNode, io: StepIO, start: float) -> StepReport:
    """Run the step's query; a failure of Spark's machinery rather than of
    the step (:func:`splice.engine.errors.transient`) runs it again, up to
    ``ATTEMPTS`` times in all: every write is idempotent, so a second run
    after a failed one is what the fault-injection tests prove safe."""
    step = node.step
    retried: list[str] = []
    while True:
        try:
            return replace(_run_query(node, io, start), retried=retried)
        except SourceError as err:
            raise StepFailed(step, str(err), err.detail) from None
        except (PySparkException, Py4JJavaError) as err:
            check_held(io.warehouse, io.pipeline.name)  # failed because its lock was lost
            cause = failure_cause(node, io, err)
            reason = transient(cause)
            if reason is None or len(retried) + 1 >= ATTEMPTS:
                raise StepFailed(step, cause.summary, cause.detail) from err
            retried.append(reason)
            _log.warning("step '%s' runs again: %s", step.id, reason)


def failure_cause(node: PhysicalNode, io: StepIO, err: BaseException) -> Cause:
    """Why the node's run failed with ``err``: in its kind's own words when
    its executor has them (``Executor.failure``), or those of a source it
    reads in place (records its broker deleted), else the root cause's."""
    cause = explain(node.step, io, err)
    worded = executor(node).failure(node, io, cause)
    if worded is None:  # a topic it reads in place may say more (records deleted unread)
        worded = next((w for s in read_in_place(node, io)
                       if (w := executor(s).failure(s, io, cause)) is not None), None)
    return cause if worded is None else replace(cause, summary=worded)


def _run_query(node: PhysicalNode, io: StepIO, start: float) -> StepReport:
    step, spark = node.step, io.spark
    io = io.reading_for(step)
    query = executor(node).query(node, io)
    path = io.table_path(step)
    before = delta_version(spark, path)
    # An appending step's first micro-batch creates its table with its first
    # rows (one commit instead of two); a table is created before its first
    # MERGE, and any output a run left without a table gets an empty one. A
    # step without a query (a source read in place) has no table of its own.
    if before is None and query.sink != Sink.APPEND and query.stream is not None:
        _create_output(step, query, path, spark)
        before = delta_version(spark, path)
    progress = RunProgress()
    dead_letters = 0
    if query.stream is not None:
        _stream(step, io, query, path, progress)
        check_held(io.warehouse, io.pipeline.name)
        if read_in_place(node, io):
            reached(KillPoint.READ_IN_PLACE, step.id)
            dead_letters = settle_in_place(node, io, progress.observed)
    after = delta_version(spark, path)
    if after is None and query.stream is not None:  # no micro-batch wrote, no table yet
        _create_output(step, query, path, spark)
        after = delta_version(spark, path)
    if query.outcome is not None:  # a step that reports more than its rows (a source)
        outcome = query.outcome()
        return StepReport(step.id, step.op, step.kind.value, path, outcome.rows, after,
                          time.monotonic() - start, dead_letters=outcome.dead_letters,
                          changed_files=outcome.changed_files)
    schema = spark.read.format("delta").load(path).schema
    return StepReport(
        step.id, step.op, step.kind.value, path,
        rows_written_since(spark, path, before), after,
        time.monotonic() - start,
        schema=[(f.name, f.dataType.simpleString()) for f in schema.fields],
        late_dropped=progress.late_dropped, state_rows=progress.state_rows,
        dead_letters=dead_letters,
        plan=next((n["plan"] for n in reversed(notes_since(spark, path, before))
                   if isinstance(n.get("plan"), dict)), None),
    )


def _stream(step: Step, io: StepIO, query: StepQuery, path: str,
            progress: RunProgress) -> None:
    """The step's query, from where its checkpoint stopped to what is there
    now, every micro-batch written through ``foreachBatch``."""
    streaming = start_stream(step, io, query, path, progress)
    try:
        streaming.awaitTermination()
    finally:
        progress.finish(streaming)


def start_stream(step: Step, io: StepIO, query: StepQuery, path: str, progress: RunProgress,
                 trigger: dict[str, Any] | None = None) -> StreamingQuery:
    """The step's query started on its checkpoint, every micro-batch written
    through ``foreachBatch``: by default it stops once it has read what was
    there when it started (``availableNow``); ``splice serve`` starts it
    with a processing-time trigger instead, on the same checkpoint."""
    assert query.stream is not None
    spark = io.spark
    checkpoint = io.checkpoint(step)
    txn = app_id(spark, checkpoint)

    # Under Spark Connect the function below runs in the server's Python
    # worker: it holds nothing of this client (no session, no streaming
    # DataFrame, no progress object), and takes its session from the batch.
    remote = is_connect(spark)
    tracker = None if remote else progress
    carried = arming() if remote else None  # a crash test's kill point (engine/faults.py)
    parts = replace(query, stream=None, outcome=None)
    # This process' hold on the pipeline, checked before every micro-batch
    # is written; under Connect the function runs in the server's worker,
    # which holds nothing, and the hold stops the query instead.
    tenure = held(io.warehouse, io.pipeline.name)
    guard = None if remote else tenure

    def write(df: DataFrame, batch_id: int) -> None:
        session = df.sparkSession
        if guard is not None:
            guard.check()
        if tracker is not None:
            tracker.during_run()
        with carried_here(carried):  # every kill point of the writers, under Connect too
            if parts.sink == Sink.CUSTOM:
                assert parts.writer is not None, f"{step.id}: a custom sink needs a writer"
                parts.writer(df, BatchTarget(session, path, txn, batch_id, step.id))
            elif parts.sink == Sink.APPEND:
                if is_no_data_batch(session, checkpoint, batch_id):
                    _append_any(parts.batch(df), path, txn, batch_id)
                elif not append(parts.batch(df), path, txn, batch_id):
                    _evaluate(parts.batch(df))  # written before the crash: not again
            else:
                _merge(session, parts.batch(df), path, parts, txn, batch_id, step.id)
            reached(KillPoint.OUTPUT_COMMITTED, step.id)

    streaming = (query.stream.writeStream.outputMode(query.output_mode)
                 # the server's worker records nothing this client could
                 # read: its error comes back in the query's exception
                 .foreachBatch(write if remote else recorded(write, checkpoint))
                 .trigger(**(trigger or {"availableNow": True}))
                 .option("checkpointLocation", checkpoint)
                 .queryName(query.name or f"{io.pipeline.name}:{step.id}")
                 .start())
    progress.query = streaming
    if tenure is not None:
        tenure.watch(streaming)
    return streaming


def _create_output(step: Step, query: StepQuery, path: str, spark: SparkSession) -> None:
    """The step's empty output table; its schema is that of the batch
    transform of no rows, so readers downstream find the table before its
    first row."""
    assert query.stream is not None, f"{step.id}: a step without a query has its table"
    empty = spark.createDataFrame([], query.stream.schema)
    ensure_table(spark, path, query.batch(empty).schema, change_feed=step.kind == Kind.TABLE)


def _append_any(rows: DataFrame, path: str, txn: str, batch_id: int) -> None:
    """A micro-batch without new input (the one that closes windows once the
    watermark moved) usually has nothing to write: skip the Delta commit then.
    The rows are computed once (cached), since computing them runs the
    stateful operator, which must run exactly once per micro-batch."""
    rows = rows.persist()
    try:
        if rows.count():
            append(rows, path, txn, batch_id)
    finally:
        rows.unpersist()


def _evaluate(rows: DataFrame) -> None:
    """Compute a replayed micro-batch without writing it.

    The write skips a batch the table holds without computing it
    (engine/io.append); but computing it is what runs a stateful operator
    (a stream-stream join) for the batch, and Spark refuses to commit the batch when its
    state stores were not committed (STATE_STORE_COMMIT_VALIDATION_FAILED):
    the join would stall for good. The rows are the ones written before,
    since the batch reads the same offsets, so they are thrown away."""
    rows.write.format("noop").mode("overwrite").save()


def _merge(spark: SparkSession, rows: DataFrame, path: str, query: StepQuery, txn: str,
           batch_id: int, step_id: str) -> None:
    flagged = rows.withColumn("__tombstone", F.expr(query.tombstone or "false"))
    merge_by_key(spark, path, flagged, "__tombstone", rows.columns, txn, batch_id, step_id)


def run_pipeline(pipeline: Pipeline, io: StepIO,
                 on_step: Callable[[int, Step, StepReport | None], None] | None = None,
                 parallel: int = 4, wait: float | None = None,
                 maintenance: MaintenancePolicy | None = None,
                 rebuild: list[str] | None = None) -> list[StepReport]:
    """:func:`run_steps` holding the pipeline's lock (engine/lock.py: waits
    ``wait`` seconds for another run, None: as long as it takes), then the
    maintenance the policy says is due (engine/maintenance.py). The steps
    ``rebuild`` names (a closed set: definitions.rebuild_targets) are
    dropped first, under the lock, to be recomputed from their sources."""
    # A bad setting stops the run here, before it writes anything.
    policy = maintenance or MaintenancePolicy.from_env()
    # Refuses a name or output another pipeline owns (ClaimRefused), a
    # pipeline another run holds (LockBusy); stops at a lost lock (TenureLost).
    with hold(pipeline, io.warehouse, wait=wait):
        if rebuild:
            definitions.drop(pipeline, io, rebuild)
        reports = run_steps(pipeline, io, on_step, parallel)
        after_run(io, policy, lambda: run_steps(pipeline, io, None, parallel))
    return reports


def run_steps(pipeline: Pipeline, io: StepIO,
              on_step: Callable[[int, Step, StepReport | None], None] | None = None,
              parallel: int = 4, only: Collection[str] | None = None) -> list[StepReport]:
    """Every step once (``only``: the steps of these ids), each after the
    steps it reads; the reports in the pipeline's order.

    Steps whose inputs are done run side by side, up to ``parallel`` at once
    (a step of a few rows mostly waits on Spark's scheduling and Delta's log,
    not on the cores); ``parallel=1`` runs them one by one in the pipeline's
    order. Each runs in its own Spark session: they share the
    SparkContext, but a MERGE's batch mark is a session setting, and
    two steps must not see each other's. On a failure no further step starts;
    the ones running finish, and the first failure is raised.
    """
    plan = planned(pipeline)
    io = bind(io, plan)
    runnable = [s for s in plan.steps if s.id not in plan.explain
                and (only is None or s.id in only)]
    definitions.check(plan, io, [s.id for s in runnable])
    index = {s.id: i for i, s in enumerate(runnable)}
    reports: dict[str, StepReport] = {}
    lock = threading.Lock()

    def run_one(step: Step) -> StepReport:
        check_held(io.warehouse, plan.name)
        if on_step:
            with lock:
                on_step(index[step.id], step, None)
        report = run_step(step, replace(io, spark=own_session(io.spark)), checked=True)
        if on_step:
            with lock:
                on_step(index[step.id], step, report)
        return report

    if parallel <= 1:  # one by one, in the pipeline's order
        return [run_one(step) for step in runnable]
    pending = list(runnable)
    running: dict[Future[StepReport], Step] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        while pending or running:
            if failure is None:
                ready = [s for s in pending
                         if all(i in reports or i not in index for i in s.inputs)]
                for step in ready:
                    pending.remove(step)
                    running[pool.submit(run_one, step)] = step
            elif not running:
                break
            if not running:  # steps come in dependency order: cannot happen
                raise RuntimeError(f"no step of {[s.id for s in pending]} can start")
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                step = running.pop(future)
                try:
                    reports[step.id] = future.result()
                except BaseException as err:
                    failure = failure or err
    if failure is not None:
        raise failure
    return [reports[s.id] for s in runnable]
