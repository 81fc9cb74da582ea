"""The executor of projections and filters over a table.

The input table's change feed is the stream. In each micro-batch the last
change of every key (by commit version; an update's pre-image is dropped)
decides the key's result row: an insert or update that passes the filter is
upserted, projected; a delete, or a row that no longer passes the filter,
deletes the key. One idempotent MERGE by ``_key`` writes it, so the result
is the projection of the input's current rows whatever the batching.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from splice.engine.io import KEY, ROWTIME, StepIO, merge_by_key
from splice.engine.query import BatchTarget, Executor, Sink, StepQuery
from splice.physical.operators import TableProjectNode

_GONE = "__splice_gone"


class TableProjectExecutor(Executor[TableProjectNode]):
    def query(self, node: TableProjectNode, io: StepIO) -> StepQuery:
        step = node.step
        latest = Window.partitionBy(KEY).orderBy(F.col("_commit_version").desc())
        passes: Column = F.coalesce(F.expr(step.filter), F.lit(False)) if step.filter \
            else F.lit(True)

        def flagged(df: DataFrame) -> DataFrame:
            last = (df.where(F.col("_change_type") != "update_preimage")
                      .withColumn("__n", F.row_number().over(latest))
                      .where("__n = 1"))
            times = [F.col(ROWTIME)] if ROWTIME in df.columns else []
            return last.select(
                F.col(KEY), *[F.expr(p.expr).alias(p.name) for p in step.select], *times,
                ((F.col("_change_type") == "delete") | ~passes).alias(_GONE))

        def batch(df: DataFrame) -> DataFrame:
            return flagged(df).drop(_GONE)

        def write(df: DataFrame, target: BatchTarget) -> None:
            rows = flagged(df)
            merge_by_key(target.spark, target.path, rows, _GONE,
                         [c for c in rows.columns if c != _GONE], target.txn_app,
                         target.batch_id, target.step_id)

        return StepQuery(stream=io.read_changes(step.inputs[0]), batch=batch,
                         sink=Sink.CUSTOM, writer=write)
