"""Lenses' late match, an opt-in of stream-table joins.

``SET join.late.match.retention = '1 HOUR';`` keeps every stream record that
found no table row (in an INNER or LEFT stream-table join, or the mirrored
RIGHT table-stream join) for at most that long, and joins it once when its
table row arrives. A LEFT join has emitted it null-padded already, so it
comes out twice: Lenses' "Keyboard appears twice".

How it runs, inside the lookup join's own query (one checkpoint):

* the query reads the stream records and the table's change feed (inserts
  and update post-images), as one tagged stream, so a table change alone
  starts a micro-batch;
* stream records join the table as it stands (the ordinary lookup); those
  without a match are added to the *pending* Delta table, which lives in the
  step's checkpoint folder (reset with it);
* table changes join the pending records: a record matches a change whose
  ``ROWTIME`` is at most the record's ``ROWTIME`` + retention (event time,
  so the result does not depend on when a run happens); each such pair is
  emitted once (the latest change of a table row wins), and the record leaves
  the pending table;
* pending records older than the micro-batch's latest ``ROWTIME`` minus the
  retention are dropped: they can no longer match.

The output rows are appended, then the pending table is updated by one
MERGE; both are marked with the micro-batch (engine/marks.py), so a
replayed micro-batch writes neither twice, and one that stopped between the two recomputes the
same late matches from the unchanged pending table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType
from splice.engine import delta_sql
from splice.engine.delta_sql import insert_values
from splice.engine.io import append, ensure_table, marked_dml
from splice.engine.query import BatchTarget
from splice.sql.columns import KEY, ROWTIME

SOURCE = "__splice_from"  # which input a row of the tagged stream comes from
RECORD = "__splice_record"  # a stream record, as a struct
CHANGE = "__splice_change"  # a table change (post-image), as a struct
MATCHED = "__splice_matched"  # set on table rows, so a LEFT join shows a miss
BATCH = "__splice_batch"  # a pending record's id: the micro-batch that kept it,
POS = "__splice_pos"  # and its position in it
VERSION = "_commit_version"


def shift(column: Column, ms: int) -> Column:
    return F.timestamp_micros(F.unix_micros(column) + F.lit(ms * 1000))


def tagged(records: DataFrame, changes: DataFrame) -> DataFrame:
    """The stream records and the table's upserts as one stream: one struct
    column each, the other NULL."""
    upserts = changes.where(F.col("_change_type").isin("insert", "update_postimage"))
    table_columns = [c for c in upserts.columns
                     if c not in ("_change_type", "_commit_timestamp")]
    record = F.struct(*[F.col(f"`{c}`") for c in records.columns])
    change = F.struct(*[F.col(f"`{c}`") for c in table_columns])
    record_type = records.select(record.alias(RECORD)).schema[RECORD].dataType
    change_type = upserts.select(change.alias(CHANGE)).schema[CHANGE].dataType
    return (records.select(F.lit("s").alias(SOURCE), record.alias(RECORD),
                           F.lit(None).cast(change_type).alias(CHANGE))
            .unionByName(upserts.select(F.lit("t").alias(SOURCE),
                                        F.lit(None).cast(record_type).alias(RECORD),
                                        change.alias(CHANGE))))


def records_of(batch: DataFrame) -> DataFrame:
    return batch.where(F.col(SOURCE) == "s").select(f"{RECORD}.*")


def changes_of(batch: DataFrame) -> DataFrame:
    return batch.where(F.col(SOURCE) == "t").select(f"{CHANGE}.*")


@dataclass(frozen=True)
class LateMatch:
    """The late match of one lookup join step.

    ``join(records, table, how)`` is the lookup: it aliases stream records
    and table rows as their sides, applies each side's filter and joins them
    on the step's condition, before the output projection; ``output`` makes
    output rows of joined rows; ``read_table`` reads the table as it stands.
    """

    pending_path: str
    retention_ms: int
    stream_side: str
    table_side: str
    preserve_unmatched: bool  # LEFT (or mirrored RIGHT): emit the miss null-padded
    join: Callable[[DataFrame, DataFrame, str], DataFrame]
    output: Callable[[DataFrame], DataFrame]
    read_table: Callable[[], DataFrame]

    def write(self, batch: DataFrame, target: BatchTarget) -> None:
        spark = target.spark
        batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            records, changes = records_of(batch), changes_of(batch)
            ensure_table(spark, self.pending_path, StructType(
                [*records.schema.fields, StructField(BATCH, LongType()),
                 StructField(POS, LongType())]))
            pending = spark.read.format("delta").load(self.pending_path)
            looked_up = self.join(records, self.read_table().withColumn(MATCHED, F.lit(True)),
                                  "left").persist(StorageLevel.MEMORY_AND_DISK)
            try:
                matched = F.col(f"{self.table_side}.{MATCHED}").isNotNull()
                direct = looked_up if self.preserve_unmatched else looked_up.where(matched)
                late = self._late(pending, changes)
                rows = self.output(direct).unionByName(self.output(late))
                append(rows, target.path, target.txn_app, target.batch_id)
                self._update_pending(pending, looked_up.where(~matched), late, batch, target)
            finally:
                looked_up.unpersist()
        finally:
            batch.unpersist()

    def _late(self, pending: DataFrame, changes: DataFrame) -> DataFrame:
        """Pending records joined with the changes that arrived in time; a
        table row changed twice in one batch is met once, as it is now."""
        latest = Window.partitionBy(KEY).orderBy(F.col(VERSION).desc())
        newest = (changes.withColumn("__n", F.row_number().over(latest))
                  .where("__n = 1").drop("__n", VERSION))
        s, t = self.stream_side, self.table_side
        joined = self.join(pending, newest.withColumn(MATCHED, F.lit(True)), "inner")
        in_time = F.col(f"{t}.{ROWTIME}") <= shift(F.col(f"{s}.{ROWTIME}"), self.retention_ms)
        return joined.where(in_time)

    def _update_pending(self, pending: DataFrame, missed: DataFrame, late: DataFrame,
                        batch: DataFrame, target: BatchTarget) -> None:
        """One MERGE: the records that missed join the pending table; those
        that matched late, or can no longer match, leave it."""
        s = self.stream_side
        stream_time = batch.select(F.greatest(
            F.max(F.col(f"{RECORD}.{ROWTIME}")), F.max(F.col(f"{CHANGE}.{ROWTIME}")))).first()[0]
        gone = late.select(F.col(f"{s}.{BATCH}").alias(BATCH), F.col(f"{s}.{POS}").alias(POS))
        if stream_time is not None:
            expired = pending.where(
                shift(F.col(ROWTIME), self.retention_ms) < F.lit(stream_time))
            gone = gone.unionByName(expired.select(BATCH, POS))
        kept = (missed.select(f"{s}.*").drop(MATCHED)
                .withColumn(BATCH, F.lit(target.batch_id).cast("long"))
                .withColumn(POS, F.monotonically_increasing_id()))
        source = (kept.withColumn("__delete", F.lit(False))
                  .unionByName(gone.distinct().withColumn("__delete", F.lit(True)),
                               allowMissingColumns=True))
        with marked_dml(target.spark, self.pending_path, target.txn_app,
                        target.batch_id) as fresh:
            if fresh:
                delta_sql.merge(target.spark, self.pending_path, source,
                                f"p.{BATCH} = n.{BATCH} AND p.{POS} = n.{POS}", [
                                    "WHEN MATCHED AND n.__delete THEN DELETE",
                                    "WHEN NOT MATCHED AND NOT n.__delete THEN INSERT "
                                    + insert_values(pending.columns, "n")],
                                target="p", alias="n")
