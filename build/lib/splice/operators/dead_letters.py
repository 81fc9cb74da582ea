"""Dead-letter tables: the records a source could not read, with the reason.

``record`` is always a valid UTF-8 string, so that any Parquet reader reads
the table: the record's own text when it is valid UTF-8
(``record_encoding = 'utf-8'``), otherwise the base64 of its raw bytes
(``record_encoding = 'base64'``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from splice.engine.faults import KillPoint, reached
from splice.engine.io import append
from splice.sql.plan import SourceStep

DEAD_LETTER_SCHEMA = StructType([
    StructField("source", StringType()),
    StructField("record", StringType()),
    StructField("reason", StringType()),
    StructField("batch_id", StringType()),
    StructField("rejected_at", StringType()),
    StructField("record_encoding", StringType()),
])

UTF8 = "utf-8"
BASE64 = "base64"


def dead_letters(step: SourceStep, bad: DataFrame, reason: Column, batch_id: int,
                 record: Column | None = None, encoding: Column | None = None,
                 extra: dict[str, Column] | None = None) -> DataFrame:
    """The dead-letter rows of ``bad``; without ``record``, the record is the
    declared columns as JSON. ``extra``: columns of the source's own (a Kafka
    record's topic, partition and offset), added to the table when it is
    first written with them."""
    if record is None:
        record = F.to_json(F.struct(*[F.col(f"`{c.name}`") for c in step.declared]))
    return bad.select(
        F.lit(step.name).alias("source"),
        record.alias("record"),
        reason.alias("reason"),
        F.lit(str(batch_id)).alias("batch_id"),
        F.date_format(F.current_timestamp(), "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("rejected_at"),
        (encoding if encoding is not None else F.lit(UTF8)).alias("record_encoding"),
        *[column.alias(name) for name, column in (extra or {}).items()],
    )


def raw_record(value: Column) -> tuple[Column, Column]:
    """A line as stored in a dead letter, and its encoding: the text when it
    is valid UTF-8, else the base64 of its bytes (a Spark string holds the
    line's bytes as read, unchecked; casting it to binary gives them back)."""
    valid = F.is_valid_utf8(value)
    record = F.when(valid, value).otherwise(F.base64(value.cast("binary")))
    return record, F.when(valid, F.lit(UTF8)).otherwise(F.lit(BASE64))


def append_dead_letters(rows: DataFrame, path: str, txn: str, batch_id: int) -> None:
    """Append with the micro-batch's idempotent marks. A table written before
    ``record_encoding`` existed gains the column (older rows read NULL, and
    were UTF-8 text)."""
    append(rows, path, txn, batch_id, merge_schema=True)


def write_checked(step: SourceStep, checked: DataFrame, order: list[str],
                  columns: list[str], value: Column, path: str, dead_path: str, txn: str,
                  batch_id: int, extra: dict[str, Column] | None = None,
                  one_file: bool = True) -> None:
    """A source's micro-batch, every record checked (``__reason`` empty for a
    good one), written as the file and Kafka sources both write it: the good
    records' ``columns`` appended to the source's table in the order they
    arrived (``order``), then the bad ones, their raw ``value`` and reason,
    to the dead letter; each append marked with the micro-batch, so that a
    replay writes neither twice.

    The good records are written in one pass over ``checked``, which
    observes, as it goes, how many records are bad and the first and last
    of them in ``order``; the dead letters are then read again from that
    range alone, and not at all when there is none. A Kafka source's
    ``checked`` is not cached (caching every record of the micro-batch to
    read a few bad ones again cost more than the decode itself), so its
    second pass reads the range's records again and checks only those (the
    range's filter sits below the decode). A replay whose rows were written
    before has observed nothing: it reads the whole micro-batch for its dead
    letters, unless those were written too.

    ``one_file``: the good records in one file, sorted (a step that reads
    the table one file per micro-batch then sees them in arrival order);
    otherwise a file per partition of ``checked``, each already in order (a
    Kafka source: one task reads one topic partition's records in offset
    order, and nothing reshuffles them; a key's records are in one of them)."""
    reason = F.col("__reason")
    place = F.struct(*order)
    observation = Observation()
    observed = checked.observe(
        observation, F.count_if(reason != "").alias("bad"),
        F.min(F.when(reason != "", place)).alias("first"),
        F.max(F.when(reason != "", place)).alias("last"))
    good = observed.where(reason == "")
    if one_file:
        good = good.repartition(1).sortWithinPartitions(*order)
    wrote = append(good.select(*columns), path, txn, batch_id)
    reached(KillPoint.SOURCE_INGESTED, step.id)
    bad = checked
    if wrote:
        seen = observation.get
        if not seen["bad"]:
            return
        bad = checked.where(place.between(_literal(checked, order, seen["first"]),
                                          _literal(checked, order, seen["last"])))
    record, encoding = raw_record(value)
    bad = bad.where(reason != "").repartition(1).sortWithinPartitions(*order)
    append_dead_letters(dead_letters(step, bad, reason, batch_id, record=record,
                                     encoding=encoding, extra=extra),
                        dead_path, txn, batch_id)


def _literal(rows: DataFrame, order: list[str], values: Row) -> Column:
    """``values`` (a row of the ``order`` columns) as a struct of their types."""
    types = {f.name: f.dataType for f in rows.schema.fields}
    return F.struct(*[F.lit(v).cast(types[n]).alias(n) for n, v in zip(order, values, strict=True)])
