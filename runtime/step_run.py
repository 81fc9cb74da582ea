"""One run of one step: the object that owns it from its markers to its report.

A :class:`StepRun` is made once per run of a step, from a StepIO the
registry bound (every node's executor looked up once,
``splice.runtime.executors.bind``). It holds the step's node, its executor,
the sources it reads in place with theirs, its table and its checkpoint,
and does, in this order: the input markers and the skip they allow, the
definition record, the query, the output table's creation, the
micro-batch writer, the retry of a transient failure and the report. The
runner (``splice.runtime.runner``) and ``splice serve``
(``splice.runtime.serve``) both run steps through it, so neither looks
anything up again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping
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
from splice.engine.progress import RunProgress, is_no_data_batch
from splice.engine.query import BatchTarget, Executor, Sink, StepQuery
from splice.engine.session import is_connect
from splice.operators.file_manifest import ChangedFile
from splice.operators.sources import SourceError
from splice.physical.base import PhysicalNode
from splice.runtime.tenure import check_held, held
from splice.sql.plan import Kind, Step

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
    # Input rows its query read (None: no query, or none that reported).
    rows_read: int | None = None

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
            **({"rows_read": self.rows_read} if self.rows_read is not None else {}),
        }


class StepFailed(Exception):
    """A step's run failed; the message says which step and why, in words
    (one paragraph); ``detail`` holds the whole error text, for logs."""

    def __init__(self, step: Step, reason: str, detail: str | None = None) -> None:
        self.step = step
        self.detail = detail or reason
        super().__init__(f"step '{step.id}' ({step.op}, from {step.where}) failed: {reason}")


def bound_executors(io: StepIO) -> Mapping[str, Executor[Any]]:
    """The executor of every node of ``io``'s plan, bound once by the registry."""
    if io.executors is None:
        raise TypeError("this StepIO is not bound to its plan's executors: build it with "
                        "splice.Workspace (its .io), which binds them once")
    return io.executors


class StepRun:
    """One run of the step ``step_id`` of ``io``'s plan."""

    def __init__(self, io: StepIO, step_id: str) -> None:
        executors = bound_executors(io)
        plan = io.pipeline
        self.node: PhysicalNode = plan.node(step_id)
        self.step: Step = self.node.step
        self.executor: Executor[Any] = executors[step_id]
        # The sources this step reads in place (Pipeline.read_in_place): it
        # streams their data and settles what they owe (dead letters).
        self.in_place: list[tuple[PhysicalNode, Executor[Any]]] = [
            (plan.node(i), executors[i]) for i in plan.read_in_place(step_id)]
        self.io = io
        self.path = io.table_path(self.step)
        self.checkpoint = io.checkpoint(self.step)

    # -- the skip ---------------------------------------------------------

    def markers(self) -> dict[str, str]:
        """What the step's streamed inputs look like now (Delta versions, or
        the files of a file source: its executor says), with the step's own
        definition: a run may be skipped when none of it changed since the
        step's last run."""
        definition = hashlib.sha256(self.step.model_dump_json().encode()).hexdigest()
        markers = {"definition": definition, **self.executor.markers(self.node, self.io)}
        for source, runs in self.in_place:  # its data, not a table it has not
            markers.update(runs.markers(source, self.io))
        return markers

    @property
    def _markers_file(self) -> str:
        return f"{self.checkpoint}/splice_inputs.json"

    def unchanged(self, markers: dict[str, str]) -> bool:
        """Whether ``markers`` are those the step's last run recorded."""
        spark, path = self.io.spark, self._markers_file
        if not fs.exists(spark, path):
            return False
        try:  # an unreadable marker (a crash mid-write before writes were atomic) is no marker
            return json.loads(fs.read_text(spark, path)) == markers
        except (OSError, ValueError):
            return False

    # -- the run ----------------------------------------------------------

    def run(self, checked: bool = False) -> StepReport:
        """Run the step once; a step none of whose streamed inputs changed
        since its last run has nothing to do, and is not started.

        A step whose SQL (or that of a step upstream) changed since its
        checkpoint was built is refused (:class:`definitions.DefinitionChanged`),
        unless ``checked`` says the caller checked the whole pipeline already."""
        start = time.monotonic()
        io, step, name = self.io, self.step, self.io.pipeline.name
        if not checked:
            definitions.check(io.pipeline, io, [step.id])
        markers = self.markers()
        if self.unchanged(markers):
            return StepReport(step.id, step.op, step.kind.value, self.path, 0,
                              delta_version(io.spark, self.path), time.monotonic() - start,
                              skipped=True,
                              changed_files=self.executor.skipped(self.node, io))
        check_held(io.warehouse, name)
        definitions.record(io, step)
        report = self._attempts(start)
        reached(KillPoint.CHECKPOINT_COMMITTED, step.id)
        check_held(io.warehouse, name)  # a query its lost lock stopped ends quietly
        fs.write_text(io.spark, self._markers_file, json.dumps(markers))
        return report

    def _attempts(self, start: float) -> StepReport:
        """Run the step's query; a failure of Spark's machinery rather than
        of the step (:func:`splice.engine.errors.transient`) runs it again,
        up to ``ATTEMPTS`` times in all: every write is idempotent, so a
        second run after a failed one is what the fault-injection tests
        prove safe."""
        retried: list[str] = []
        while True:
            try:
                return replace(self._run_query(start), retried=retried)
            except SourceError as err:
                raise StepFailed(self.step, str(err), err.detail) from None
            except (PySparkException, Py4JJavaError) as err:
                check_held(self.io.warehouse, self.io.pipeline.name)  # its lock was lost
                cause = self.failure_cause(err)
                reason = transient(cause)
                if reason is None or len(retried) + 1 >= ATTEMPTS:
                    raise StepFailed(self.step, cause.summary, cause.detail) from err
                retried.append(reason)
                _log.warning("step '%s' runs again: %s", self.step.id, reason)

    def failure_cause(self, err: BaseException) -> Cause:
        """Why the run failed with ``err``: in its kind's own words when its
        executor has them (``Executor.failure``), or those of a source it
        reads in place (records its broker deleted), else the root cause's."""
        cause = explain(self.step, self.io, err)
        worded = self.executor.failure(self.node, self.io, cause)
        if worded is None:  # a topic it reads in place may say more (records deleted unread)
            worded = next((w for s, runs in self.in_place
                           if (w := runs.failure(s, self.io, cause)) is not None), None)
        return cause if worded is None else replace(cause, summary=worded)

    def query(self) -> tuple[StepIO, StepQuery]:
        """The step's query, built by its executor, with the StepIO it reads
        through (the streams it reads start where its checkpoint decided)."""
        io = self.io.reading_for(self.step)
        return io, self.executor.query(self.node, io)

    def _run_query(self, start: float) -> StepReport:
        step, spark, path = self.step, self.io.spark, self.path
        io, query = self.query()
        before = delta_version(spark, path)
        # An appending step's first micro-batch creates its table with its
        # first rows (one commit instead of two); a table is created before
        # its first MERGE, and any output a run left without a table gets an
        # empty one. A step without a query (a source read in place) has no
        # table of its own.
        if before is None and query.sink != Sink.APPEND and query.stream is not None:
            self.create_output(query)
            before = delta_version(spark, path)
        progress = RunProgress()
        dead_letters = 0
        if query.stream is not None:
            streaming = self.start(io, query, progress)
            try:
                streaming.awaitTermination()
            finally:
                progress.finish(streaming)
            check_held(io.warehouse, io.pipeline.name)
            if self.in_place:
                reached(KillPoint.READ_IN_PLACE, step.id)
                dead_letters = self.settle(progress.observed)
        # Unknown (None), not 0, under Spark Connect: foreachBatch runs each
        # micro-batch in the server's Python worker, and the query's reports
        # then count no input rows (numInputRows 0 for a batch of 2 rows).
        read = (progress.rows_read if query.stream is not None and progress.read
                and not is_connect(spark) else None)
        after = delta_version(spark, path)
        if after is None and query.stream is not None:  # no micro-batch wrote, no table yet
            self.create_output(query)
            after = delta_version(spark, path)
        if query.outcome is not None:  # a step that reports more than its rows (a source)
            outcome = query.outcome()
            return StepReport(step.id, step.op, step.kind.value, path, outcome.rows, after,
                              time.monotonic() - start, dead_letters=outcome.dead_letters,
                              changed_files=outcome.changed_files, rows_read=read)
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
            rows_read=read,
        )

    def settle(self, observed: dict[int, dict[str, Any]]) -> int:
        """What the sources this step reads in place owe for its committed
        micro-batches (their dead letters), written; how many."""
        return sum(runs.settle(source, self.io, self.step, observed)
                   for source, runs in self.in_place)

    # -- the output -------------------------------------------------------

    def create_output(self, query: StepQuery) -> None:
        """The step's empty output table; its schema is that of the batch
        transform of no rows, so readers downstream find the table before
        its first row."""
        assert query.stream is not None, f"{self.step.id}: a step without a query has its table"
        spark = self.io.spark
        empty = spark.createDataFrame([], query.stream.schema)
        ensure_table(spark, self.path, query.batch(empty).schema,
                     change_feed=self.step.kind == Kind.TABLE)

    def start(self, io: StepIO, query: StepQuery, progress: RunProgress,
              trigger: dict[str, Any] | None = None) -> StreamingQuery:
        """The step's query started on its checkpoint, every micro-batch
        written through ``foreachBatch``: by default it stops once it has
        read what was there when it started (``availableNow``); ``splice
        serve`` starts it with a processing-time trigger instead, on the
        same checkpoint."""
        assert query.stream is not None
        spark, step, path, checkpoint = io.spark, self.step, self.path, self.checkpoint
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
        progress.watch(io.pipeline.name, step.id, streaming)
        if tenure is not None:
            tenure.watch(streaming)
        return streaming


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


def _merge(spark: SparkSession, rows: DataFrame, path: str, query: StepQuery, txn: str,
           batch_id: int, step_id: str) -> None:
    flagged = rows.withColumn("__tombstone", F.expr(query.tombstone or "false"))
    merge_by_key(spark, path, flagged, "__tombstone", rows.columns, txn, batch_id, step_id)


def _evaluate(rows: DataFrame) -> None:
    """Compute a replayed micro-batch without writing it.

    The write skips a batch the table holds without computing it
    (engine/io.append); but computing it is what runs a stateful operator
    (a stream-stream join) for the batch, and Spark refuses to commit the batch when its
    state stores were not committed (STATE_STORE_COMMIT_VALIDATION_FAILED):
    the join would stall for good. The rows are the ones written before,
    since the batch reads the same offsets, so they are thrown away."""
    rows.write.format("noop").mode("overwrite").save()
