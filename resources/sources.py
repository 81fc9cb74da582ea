"""Source readers: from a source's own data to the stored layout.

A Delta source is read in place. A JSON-lines source is ingested
(``resources.json_source``): each line is parsed against the declared schema;
a line that is not JSON, a field that does not convert to its declared type,
or a missing event time sends the record to the source's dead-letter table
with the reason, and the run goes on. Either way every reader yields
``_key``, the declared columns and ``ROWTIME`` (the declared event time, or
the ingestion time when none is declared).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from engine.errors import recorded, root_cause
from engine.faults import KillPoint, reached
from engine.io import (
    KEY,
    ROWTIME,
    StepIO,
    app_id,
    delta_exists,
    delta_version,
    ensure_table,
    rows_written_since,
)
from resources.dead_letters import DEAD_LETTER_SCHEMA, append_dead_letters, dead_letters
from resources.file_manifest import ChangedFile, last_changed
from resources.json_source import ingest_json
from sql.plan import SourceStep


class SourceError(Exception):
    """A source that cannot be read at all (not one bad record); ``detail``
    keeps the whole text of the error behind it, for logs."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


@dataclass
class SourceReport:
    rows: int
    dead_letters: int
    version: int | None
    path: str
    changed_files: list[ChangedFile] = field(default_factory=list)


def declared_schema(step: SourceStep) -> StructType:
    return StructType.fromDDL(", ".join(f"`{c.name}` {c.type}" for c in step.declared))


def _key_column(step: SourceStep) -> Column:
    keys = step.relation.key_columns
    if not keys:
        return F.lit(None).cast("string")
    if len(keys) == 1:
        return F.col(f"`{keys[0]}`")
    return F.struct(*[F.col(f"`{k}`") for k in keys])


def _rowtime(step: SourceStep) -> Column:
    ts = step.timestamp_column
    if ts is None:
        return F.current_timestamp()
    typ = next(c.type for c in step.declared if c.name == ts)
    col = F.col(f"`{ts}`")
    if typ == "bigint":
        return F.timestamp_millis(col)
    return col.cast("timestamp")


def valid_condition(step: SourceStep) -> Column:
    """What a stored record must satisfy to be read: a declared event time."""
    if step.timestamp_column is None:
        return F.lit(True)
    return F.col(f"`{step.timestamp_column}`").isNotNull()


def normalize(step: SourceStep, df: DataFrame) -> DataFrame:
    """``_key``, the declared columns (as declared), ``ROWTIME``."""
    columns = [F.col(f"`{c.name}`").cast(c.type).alias(c.name) for c in step.declared]
    return df.select(_key_column(step).alias(KEY), *columns, _rowtime(step).alias(ROWTIME))


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


def read_source_stream(io: StepIO, step: SourceStep, **options: str) -> DataFrame:
    path = ensure_source(io.spark, io, step)
    reader = io.spark.readStream.format("delta")
    for key, value in options.items():
        reader = reader.option(key, value)
    return normalize(step, reader.load(path).where(valid_condition(step)))


def run_source(io: StepIO, step: SourceStep) -> SourceReport:
    """A source's own step: ingest a file source into Delta, or check a Delta
    source's records; either way rejected records go to the dead-letter table."""
    spark = io.spark
    dead_path = io.warehouse.dead_letter_path(io.pipeline.name, step.name)
    ensure_table(spark, dead_path, DEAD_LETTER_SCHEMA)
    txn = app_id(spark, io.checkpoint(step))
    if step.format != "delta":
        path = stored_path(io, step)
        rows, dead, changed = ingest_json(io, step, path, dead_path, txn)
        return SourceReport(rows=rows, dead_letters=dead, version=delta_version(spark, path),
                            path=path, changed_files=changed)
    path = ensure_source(spark, io, step)
    if step.timestamp_column is None:
        return SourceReport(rows=0, dead_letters=0, version=delta_version(spark, path), path=path)
    dead_before = delta_version(spark, dead_path)
    reason = F.lit(f"missing event time '{step.timestamp_column}'")

    def check(batch: DataFrame, batch_id: int) -> None:
        # Counted before it is written: a batch without a rejected record
        # makes no dead-letter commit. Computed once (cached).
        bad = batch.where(~valid_condition(step)).persist()
        try:
            if bad.count():
                append_dead_letters(dead_letters(step, bad, reason, batch_id), dead_path, txn,
                                    batch_id)
        finally:
            bad.unpersist()
        reached(KillPoint.OUTPUT_COMMITTED, step.id)

    checkpoint = io.checkpoint(step)
    query = (spark.readStream.format("delta").load(path).writeStream
             .foreachBatch(recorded(check, checkpoint)).trigger(availableNow=True)
             .option("checkpointLocation", checkpoint).queryName(f"source:{step.id}").start())
    query.awaitTermination()
    return SourceReport(rows=0, dead_letters=rows_written_since(spark, dead_path, dead_before),
                        version=delta_version(spark, path), path=path)


def source_changed_files(io: StepIO, step: SourceStep) -> list[ChangedFile]:
    """A file source's files changed in place after they were ingested, as
    its last run found them: a run that skips the source saw the same
    files (the source's input markers hold every file's size and time)."""
    if step.format == "delta":
        return []
    return last_changed(io.spark, io.checkpoint(step))
