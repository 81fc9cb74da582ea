"""Executors of projections and repartitions: one input, row by row."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from splice.engine.io import KEY, ROWTIME, StepIO
from splice.engine.query import Executor, StepQuery
from splice.physical.base import read_in_order
from splice.physical.operators import ProjectNode, RepartitionNode


def ordered_input(node: ProjectNode | RepartitionNode, io: StepIO) -> DataFrame:
    """A stream step's input, one file per micro-batch when a step downstream
    depends on arrival order (a table materialization: the latest record of a
    key wins). Spark reads a micro-batch's files in order of size, so a batch
    of several files would scramble the records of different appends; one
    file per batch keeps them in order, file after file."""
    if read_in_order(io.pipeline, node.step.id):
        return io.read_stream(node.step.inputs[0], maxFilesPerTrigger="1")
    return io.read_stream(node.step.inputs[0])


class ProjectExecutor(Executor[ProjectNode]):
    def query(self, node: ProjectNode, io: StepIO) -> StepQuery:
        step = node.step

        def batch(df: DataFrame) -> DataFrame:
            if step.filter:
                df = df.where(F.expr(step.filter))
            return df.select(
                (F.expr(step.key) if step.key else F.col(KEY)).alias(KEY),
                *[F.expr(p.expr).alias(p.name) for p in step.select],
                F.col(ROWTIME),
            )

        return StepQuery(stream=ordered_input(node, io), batch=batch)


class RepartitionExecutor(Executor[RepartitionNode]):
    def query(self, node: RepartitionNode, io: StepIO) -> StepQuery:
        step = node.step
        columns = [F.col(f"`{c.name}`") for c in step.relation.columns]

        def batch(df: DataFrame) -> DataFrame:
            return df.select(F.expr(step.key).alias(KEY), *columns, F.col(ROWTIME))

        return StepQuery(stream=ordered_input(node, io), batch=batch)
