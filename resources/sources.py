"""Source readers: from a source's own data to the stored layout.

A Delta source is read in place. A JSON-lines source is ingested: each line
is parsed against the declared schema; a line that is not JSON, a field that
does not convert to its declared type, or a missing event time sends the
record to the source's dead-letter table with the reason, and the run goes
on. Either way every reader yields ``_key``, the declared columns and
``ROWTIME`` (the declared event time, or the ingestion time when none is
declared).
"""

from __future__ import annotations

from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from engine.errors import recorded, root_cause
from engine.io import (
    KEY,
    ROWTIME,
    StepIO,
    app_id,
    append,
    delta_exists,
    delta_version,
    ensure_table,
    rows_written_since,
)
from sql.plan import SourceStep

DEAD_LETTER_SCHEMA = StructType([
    StructField("source", StringType()),
    StructField("record", StringType()),
    StructField("reason", StringType()),
    StructField("batch_id", StringType()),
    StructField("rejected_at", StringType()),
])


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
    dead_before = delta_version(spark, dead_path)
    checkpoint = io.checkpoint(step)
    txn = app_id(spark, checkpoint)
    if step.format == "delta":
        path = ensure_source(spark, io, step)
        if step.timestamp_column is None:
            return SourceReport(rows=0, dead_letters=0, version=delta_version(spark, path),
                                path=path)
        stream = spark.readStream.format("delta").load(path)

        def check(batch: DataFrame, batch_id: int) -> None:
            bad = batch.where(~valid_condition(step))
            append(_dead_letters(step, bad, F.lit(f"missing event time '{step.timestamp_column}'"),
                                 batch_id), dead_path, txn, batch_id)
    else:
        path = stored_path(io, step)
        ensure_table(spark, path, declared_schema(step))
        before = delta_version(spark, path)
        raw_dir = io.warehouse.source_path(step.location)
        _ensure_dir(spark, raw_dir)
        stream = spark.readStream.format("text").load(raw_dir)

        def check(batch: DataFrame, batch_id: int) -> None:
            good, bad = _parse_json(step, batch)
            append(good, path, txn, batch_id)
            append(_dead_letters(step, bad, F.col("__reason"), batch_id,
                                 record=F.col("value")), dead_path, txn, batch_id)

    query = (stream.writeStream.foreachBatch(recorded(check, checkpoint))
             .trigger(availableNow=True)
             .option("checkpointLocation", checkpoint).queryName(f"source:{step.id}").start())
    query.awaitTermination()
    rows = rows_written_since(spark, path, before) if step.format != "delta" else 0
    return SourceReport(rows=rows, dead_letters=rows_written_since(spark, dead_path, dead_before),
                        version=delta_version(spark, path), path=path)


def _ensure_dir(spark: SparkSession, path: str) -> None:
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(hadoop_path):
        fs.mkdirs(hadoop_path)


def _parse_json(step: SourceStep, batch: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split one batch of JSON lines into typed good rows and rejected ones."""
    as_text = StructType([StructField(c.name, StringType()) for c in step.declared]
                         + [StructField("__corrupt", StringType())])
    parsed = batch.where(F.trim("value") != "").select(
        "value",
        F.from_json("value", as_text, {"mode": "PERMISSIVE",
                                       "columnNameOfCorruptRecord": "__corrupt"}).alias("j"),
    )
    broken = F.col("j").isNull() | F.col("j.__corrupt").isNotNull()
    reasons: list[Column] = []
    typed: list[Column] = []
    for c in step.declared:
        text = F.col("j").getField(c.name)
        value = _convert(text, c.type)
        typed.append(value.alias(c.name))
        reasons.append(F.when(text.isNotNull() & value.isNull(), F.concat(
            F.lit(f"column '{c.name}': '"), text, F.lit(f"' is not {c.type.upper()}"))))
        if c.name == step.timestamp_column:
            reasons.append(F.when(text.isNull(), F.lit(f"missing event time '{c.name}'")))
    reason = F.when(broken, F.lit("not a JSON object")).otherwise(F.concat_ws("; ", *reasons))
    checked = parsed.select("value", *typed, reason.alias("__reason"))
    good = checked.where(F.col("__reason") == "").select(*[f"`{c.name}`" for c in step.declared])
    bad = checked.where(F.col("__reason") != "")
    return good, bad


def _convert(text: Column, typ: str) -> Column:
    if typ.startswith(("struct", "array", "map")):
        return F.from_json(text, typ)
    if typ == "boolean":
        lowered = F.lower(text)
        return F.when(lowered == "true", True).when(lowered == "false", False)
    return text.try_cast(typ)


def _dead_letters(step: SourceStep, bad: DataFrame, reason: Column, batch_id: int,
                  record: Column | None = None) -> DataFrame:
    if record is None:
        record = F.to_json(F.struct(*[F.col(f"`{c.name}`") for c in step.declared]))
    return bad.select(
        F.lit(step.name).alias("source"),
        record.alias("record"),
        reason.alias("reason"),
        F.lit(str(batch_id)).alias("batch_id"),
        F.date_format(F.current_timestamp(), "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("rejected_at"),
    )
