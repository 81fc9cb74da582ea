"""Source readers: from a source's own data to the stored layout.

A Delta source is read in place. A JSON-lines source is ingested
(``splice.operators.json_source``): each line is parsed against the declared schema;
a line that is not JSON, a field that does not convert to its declared type,
or a missing event time sends the record to the source's dead-letter table
with the reason, and the run goes on. Either way every reader yields
``_key``, the declared columns and ``ROWTIME`` (the declared event time, or
the ingestion time when none is declared).
"""

from __future__ import annotations

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType
from splice.engine.errors import root_cause
from splice.engine.io import (
    KEY,
    ROWTIME,
    StepIO,
    delta_exists,
    delta_version,
    ensure_table,
    rows_written_since,
)
from splice.engine.query import BatchTarget, Executor, Outcome, Sink, StepQuery
from splice.engine.stream_start import delta_stream
from splice.operators.dead_letters import DEAD_LETTER_SCHEMA, append_dead_letters, dead_letters
from splice.physical.sources import DeltaSource, SourceNode
from splice.sql.plan import MaterializeStep, SourceStep


class SourceError(Exception):
    """A source that cannot be read at all (not one bad record); ``detail``
    keeps the whole text of the error behind it, for logs."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


def declared_schema(step: SourceStep) -> StructType:
    return StructType.fromDDL(", ".join(f"`{c.name}` {c.type}" for c in step.declared))


def _key_column(step: SourceStep) -> Column:
    keys = step.relation.key_columns
    if not keys:
        return F.lit(None).cast("string")
    if len(keys) == 1:
        return F.col(f"`{keys[0]}`")
    return F.struct(*[F.col(f"`{k}`") for k in keys])


def rowtime_of(step: SourceStep) -> Column:
    """The event time of a stored record: its declared time column, as a
    timestamp (a BIGINT is epoch milliseconds), else the ingestion time."""
    ts = step.timestamp_column
    if ts is None:
        return F.current_timestamp()
    typ = next(c.type for c in step.declared if c.name == ts)
    col = F.col(f"`{ts}`")
    if typ == "bigint":
        return F.timestamp_millis(col)
    return col.cast("timestamp")


def valid_condition(step: SourceStep, table: bool = False) -> Column:
    """What a stored record must satisfy to be read: a declared event time;
    read as a table, a key (ksqlDB drops a table record without one, and a
    Kafka table topic's goes to the dead letter: so does a Delta row's)."""
    valid = F.lit(True)
    if step.timestamp_column is not None:
        valid = F.col(f"`{step.timestamp_column}`").isNotNull()
    keys = step.relation.key_columns
    if table and keys:
        valid = valid & ~F.expr(" AND ".join(f"`{k}` IS NULL" for k in keys))
    return valid


def read_as_table(io: StepIO, step: SourceStep) -> bool:
    """Whether the pipeline reads ``step`` as a table (a source declared with
    CREATE TABLE: its materialization reads it and nothing else)."""
    return any(isinstance(s, MaterializeStep) and s.inputs == (step.id,)
               for s in io.pipeline.steps)


def normalize(step: SourceStep, df: DataFrame) -> DataFrame:
    """``_key``, the declared columns (as declared), ``ROWTIME``."""
    columns = [F.col(f"`{c.name}`").cast(c.type).alias(c.name) for c in step.declared]
    return df.select(_key_column(step).alias(KEY), *columns, rowtime_of(step).alias(ROWTIME))


def stored_path(io: StepIO, step: SourceStep) -> str:
    return io.table_path(step)


def ensure_source(spark: SparkSession, io: StepIO, step: SourceStep) -> str:
    """The Delta table a source's readers read, checked against the declared
    schema. A missing table is created empty when it is the warehouse's own
    (a relative location, or a file source's ingested table); a Delta source
    at a location of its own (with a scheme) must be there: an empty table
    made in its place would hide a wrong location."""
    path = stored_path(io, step)
    external = step.format == "delta" and io.warehouse.source_path(step.location) == step.location
    if not external and not delta_exists(spark, path):
        ensure_table(spark, path, declared_schema(step))
        return path
    try:
        fields = spark.read.format("delta").load(path).schema.fields
    except (PySparkException, Py4JJavaError) as err:
        cause = root_cause(err)
        raise SourceError(
            f"source '{step.name}' (declared at {step.where}) cannot be read from the Delta "
            f"table at {path}: {cause.summary.rstrip('.')}; check the table, or the source's "
            "location",
            cause.detail) from None
    check_declared_types(spark, step, path, fields)
    return path


def check_declared_types(spark: SparkSession, step: SourceStep, path: str,
                         fields: list[StructField]) -> None:
    """Every declared column is in the table, with the declared type or one
    that widens to it without loss (INT read as BIGINT, FLOAT as DOUBLE)."""
    actual = {f.name.lower(): f for f in fields}
    declared = {f.name.lower(): f.dataType for f in declared_schema(step).fields}
    for col in step.declared:
        field = actual.get(col.name.lower())
        if field is None:
            raise SourceError(
                f"source '{step.name}' declares column '{col.name}', but the Delta table at "
                f"{path} has no such column (it has: {', '.join(actual) or 'none'}); fix the "
                f"declaration at {step.where}")
        want = declared[col.name.lower()]
        if not _widens(field.dataType, want):
            has, wants = field.dataType.simpleString().upper(), want.simpleString().upper()
            raise SourceError(
                f"source '{step.name}' column '{col.name}' is {has} in the Delta table at "
                f"{path} (version {delta_version(spark, path)}) but declared {wants} at "
                f"{step.where}; fix the declaration (then rebuild the steps that read it: "
                f"`splice run --rebuild all`), or restore the column's type in the table")


_INTEGRAL = ["tinyint", "smallint", "int", "bigint"]


def _widens(has: DataType, wants: DataType) -> bool:
    a, b = has.simpleString(), wants.simpleString()
    if a == b:
        return True
    if a in _INTEGRAL and b in _INTEGRAL:
        return _INTEGRAL.index(a) < _INTEGRAL.index(b)
    return (a, b) == ("float", "double") or (a in _INTEGRAL[:3] and b == "double")


def dead_letter_table(io: StepIO, step: SourceStep) -> str:
    """The source's dead-letter table, created empty when missing."""
    path = io.warehouse.dead_letter_path(io.pipeline.name, step.name)
    ensure_table(io.spark, path, DEAD_LETTER_SCHEMA)
    return path


class SourceExecutor(Executor[SourceNode]):
    """What every source format shares: downstream steps read the source's
    Delta table as a stream, normalized to the stored layout."""

    def read_stream(self, node: SourceNode, io: StepIO, options: dict[str, str]) -> DataFrame:
        step = node.step
        path = ensure_source(io.spark, io, step)
        stream = delta_stream(io.spark, path, options, checkpoint=io.stream_checkpoint)
        return normalize(step, stream.where(valid_condition(step)))


class DeltaSourceExecutor(SourceExecutor):
    """A Delta source's own step: its records without an event time go to
    the dead-letter table (the table itself is read in place)."""

    def markers(self, node: SourceNode, io: StepIO) -> dict[str, str]:
        path = io.table_path(node.step)
        return {path: str(delta_version(io.spark, path))}

    def read_stream(self, node: SourceNode, io: StepIO, options: dict[str, str]) -> DataFrame:
        step = node.step
        path = ensure_source(io.spark, io, step)
        stream = delta_stream(io.spark, path, options, checkpoint=io.stream_checkpoint)
        return normalize(step, stream.where(valid_condition(step, read_as_table(io, step))))

    def query(self, node: SourceNode, io: StepIO) -> StepQuery:
        assert isinstance(node, DeltaSource)
        step, spark = node.step, io.spark
        dead_path = dead_letter_table(io, step)
        path = ensure_source(spark, io, step)
        table = read_as_table(io, step) and bool(step.relation.key_columns)
        if step.timestamp_column is None and not table:  # nothing to check
            return StepQuery(stream=None, sink=Sink.CUSTOM, outcome=lambda: Outcome(rows=0))
        dead_before = delta_version(spark, dead_path)
        no_time = (F.col(f"`{step.timestamp_column}`").isNull()
                   if step.timestamp_column is not None else F.lit(False))
        no_key = (F.expr(" AND ".join(f"`{k}` IS NULL" for k in step.relation.key_columns))
                  if table else F.lit(False))
        reason = F.concat_ws("; ", F.when(no_time, F.lit(
            f"missing event time '{step.timestamp_column}'")),
            F.when(no_key, F.lit("missing key: a table's row needs its key")))

        def check(batch: DataFrame, target: BatchTarget) -> None:
            # Counted before it is written: a batch without a rejected record
            # makes no dead-letter commit. Computed once (cached).
            bad = batch.where(~valid_condition(step, table)).persist()
            try:
                if bad.count():
                    append_dead_letters(dead_letters(step, bad, reason, target.batch_id),
                                        dead_path, target.txn_app, target.batch_id)
            finally:
                bad.unpersist()

        return StepQuery(
            stream=delta_stream(spark, path, checkpoint=io.stream_checkpoint),
            sink=Sink.CUSTOM, writer=check,
            outcome=lambda: Outcome(
                rows=0, dead_letters=rows_written_since(spark, dead_path, dead_before)),
            name=f"source:{step.id}")
