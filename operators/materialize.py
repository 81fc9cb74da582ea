"""The executor of table materializations: latest record per key wins."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from splice.engine.io import KEY, StepIO
from splice.engine.query import Executor, Sink, StepQuery
from splice.physical.operators import MaterializeNode


class MaterializeExecutor(Executor[MaterializeNode]):
    def query(self, node: MaterializeNode, io: StepIO) -> StepQuery:
        """One input file per micro-batch keeps the records of a batch in
        arrival order (Spark orders a batch's files by size, not by arrival),
        so 'latest' is the last one written."""
        step = node.step
        order = Window.partitionBy(KEY).orderBy(F.col("__seq").desc())

        def batch(df: DataFrame) -> DataFrame:
            return (df.withColumn("__seq", F.monotonically_increasing_id())
                      .withColumn("__n", F.row_number().over(order))
                      .where("__n = 1").drop("__seq", "__n"))

        tombstone = (" AND ".join(f"`{c}` IS NULL" for c in step.tombstone_columns)
                     if step.tombstone_columns else "false")
        return StepQuery(stream=io.read_stream(step.inputs[0], maxFilesPerTrigger="1"),
                         batch=batch, sink=Sink.MERGE, tombstone=tombstone)
