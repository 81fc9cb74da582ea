"""The Spark query of every non-join step; joins come from ``joins.planner``."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from engine.io import StepIO, merge_by_key
from engine.query import BatchTarget, Sink, StepQuery
from joins.physical.lookup import has_fact
from joins.planner import physical_join
from sql.columns import KEY, ROWTIME
from sql.plan import (
    AggregateStep,
    JoinStep,
    MaterializeStep,
    ProjectStep,
    RepartitionStep,
    Step,
)

_HAVING = "__splice_having"


def build_query(step: Step, io: StepIO) -> StepQuery:
    if isinstance(step, ProjectStep):
        return _project(step, io)
    if isinstance(step, RepartitionStep):
        return _repartition(step, io)
    if isinstance(step, MaterializeStep):
        return _materialize(step, io)
    if isinstance(step, JoinStep):
        return physical_join(step).build(io)
    if isinstance(step, AggregateStep):
        return _aggregate(step, io)
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

    return StepQuery(stream=_read_in_order(step, io), batch=batch)


def _read_in_order(step: ProjectStep | RepartitionStep, io: StepIO) -> DataFrame:
    """A stream step's input, one file per micro-batch when a step downstream
    depends on arrival order (a table materialization: the latest record of a
    key wins). Spark reads a micro-batch's files in order of size, so a batch
    of several files would scramble the records of different appends; one
    file per batch keeps them in order, file after file."""
    if _order_matters(step.id, io):
        return io.read_stream(step.inputs[0], maxFilesPerTrigger="1")
    return io.read_stream(step.inputs[0])


def _order_matters(step_id: str, io: StepIO) -> bool:
    for consumer in io.pipeline.downstream(step_id):
        if isinstance(consumer, MaterializeStep) or (isinstance(consumer, JoinStep)
                                                     and consumer.asof is not None):
            return True
        if isinstance(consumer, ProjectStep | RepartitionStep) and _order_matters(
                consumer.id, io):
            return True
    return False


def _repartition(step: RepartitionStep, io: StepIO) -> StepQuery:
    columns = [F.col(f"`{c.name}`") for c in step.relation.columns]

    def batch(df: DataFrame) -> DataFrame:
        return df.select(F.expr(step.key).alias(KEY), *columns, F.col(ROWTIME))

    return StepQuery(stream=_read_in_order(step, io), batch=batch)


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


def _aggregate(step: AggregateStep, io: StepIO) -> StepQuery:
    """Spark's stateful streaming aggregation in UPDATE output mode: every
    micro-batch holds the groups its records changed, with their new values,
    and one idempotent MERGE upserts them by ``_key``. A group whose HAVING
    turns false is deleted (a SUM can fall back under its bound).

    The key, the projections, HAVING and ROWTIME are all aggregate outputs:
    Spark evaluates expressions of the grouping expressions and of aggregate
    calls after grouping, so the analyzer's Spark SQL is used as it is.
    """
    source = io.pipeline.step(step.inputs[0])
    # A stream record whose value columns are all NULL carries no fact.
    stream = io.read_stream(source.id).where(has_fact(source.relation))
    if step.filter:
        stream = stream.where(F.expr(step.filter))
    names = [KEY, *(p.name for p in step.select), _HAVING, ROWTIME]
    exprs = [step.key, *(p.expr for p in step.select), step.having or "true", step.rowtime]
    grouped = stream.groupBy(*[F.expr(g) for g in step.group_by]).agg(
        *[F.expr(e) for e in exprs])
    # Spark puts the grouping columns first; their names may clash with the
    # projections', so every column is renamed by position.
    extra = len(grouped.columns) - len(names)
    grouped = grouped.toDF(*[f"__splice_g{i}" for i in range(extra)], *names).select(*[
        F.col(f"`{n}`") for n in names])

    def batch(df: DataFrame) -> DataFrame:
        return df.drop(_HAVING)

    def write(df: DataFrame, target: BatchTarget) -> None:

        # Every partition of the batch must be computed for the state store
        # to commit (Spark 4.2 checks it), also when the MERGE below is
        # skipped because a replayed batch was written already.
        df = df.persist()
        try:
            df.count()
            rows = batch(df)
            flagged = df.withColumn("__delete", ~F.coalesce(F.col(_HAVING), F.lit(False)))
            merge_by_key(target.spark, target.path, flagged, "__delete", rows.columns,
                         target.txn_app, target.batch_id, target.step_id)
        finally:
            df.unpersist()

    return StepQuery(stream=grouped, batch=batch, sink=Sink.CUSTOM, writer=write,
                     output_mode="update")
