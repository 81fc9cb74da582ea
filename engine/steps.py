"""The Spark query of every non-join step; joins come from ``joins.planner``."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from engine.io import KEY, ROWTIME, StepIO
from engine.query import Sink, StepQuery
from joins.planner import physical_join
from sql.plan import JoinStep, MaterializeStep, ProjectStep, RepartitionStep, Step


def build_query(step: Step, io: StepIO) -> StepQuery:
    if isinstance(step, ProjectStep):
        return _project(step, io)
    if isinstance(step, RepartitionStep):
        return _repartition(step, io)
    if isinstance(step, MaterializeStep):
        return _materialize(step, io)
    if isinstance(step, JoinStep):
        return physical_join(step).build(io)
    raise TypeError(f"no query for a {step.op} step")


def _project(step: ProjectStep, io: StepIO) -> StepQuery:
    def batch(df: DataFrame) -> DataFrame:
        if step.filter:
            df = df.where(F.expr(step.filter))
        return df.select(
            (F.expr(step.key) if step.key else F.col(KEY)).alias(KEY),
            *[F.expr(p.expr).alias(p.name) for p in step.select],
            F.col(ROWTIME),
        )

    return StepQuery(stream=io.read_stream(step.inputs[0]), batch=batch)


def _repartition(step: RepartitionStep, io: StepIO) -> StepQuery:
    columns = [F.col(f"`{c.name}`") for c in step.relation.columns]

    def batch(df: DataFrame) -> DataFrame:
        return df.select(F.expr(step.key).alias(KEY), *columns, F.col(ROWTIME))

    return StepQuery(stream=io.read_stream(step.inputs[0]), batch=batch)


def _materialize(step: MaterializeStep, io: StepIO) -> StepQuery:
    """Latest record per key wins. One input file per micro-batch keeps the
    records of a batch in arrival order (Spark orders a batch's files by size,
    not by arrival), so 'latest' is the last one written."""
    order = Window.partitionBy(KEY).orderBy(F.col("__seq").desc())

    def batch(df: DataFrame) -> DataFrame:
        return (df.withColumn("__seq", F.monotonically_increasing_id())
                  .withColumn("__n", F.row_number().over(order))
                  .where("__n = 1").drop("__seq", "__n"))

    tombstone = (" AND ".join(f"`{c}` IS NULL" for c in step.tombstone_columns)
                 if step.tombstone_columns else "false")
    return StepQuery(stream=io.read_stream(step.inputs[0], maxFilesPerTrigger="1"),
                     batch=batch, sink=Sink.MERGE, tombstone=tombstone)
