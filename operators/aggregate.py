"""The executor of GROUP BY steps."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from splice.engine.io import KEY, ROWTIME, StepIO, has_fact, merge_by_key
from splice.engine.query import BatchTarget, Executor, Sink, StepQuery
from splice.physical.operators import AggregateNode

_HAVING = "__splice_having"


class AggregateExecutor(Executor[AggregateNode]):
    def query(self, node: AggregateNode, io: StepIO) -> StepQuery:
        """Spark's stateful streaming aggregation in UPDATE output mode: every
        micro-batch holds the groups its records changed, with their new
        values, and one idempotent MERGE upserts them by ``_key``. A group
        whose HAVING turns false is deleted (a SUM can fall back under its
        bound).

        The key, the projections, HAVING and ROWTIME are all aggregate
        outputs: Spark evaluates expressions of the grouping expressions and
        of aggregate calls after grouping, so the analyzer's Spark SQL is used
        as it is.
        """
        step = node.step
        source = io.pipeline.step(step.inputs[0])
        # A stream record whose value columns are all NULL carries no fact.
        stream = io.read_stream(source.id).where(has_fact(source.relation))
        if step.filter:
            stream = stream.where(F.expr(step.filter))
        names = [KEY, *(p.name for p in step.select), _HAVING, ROWTIME]
        exprs = [step.key, *(p.expr for p in step.select), step.having or "true",
                 step.rowtime]
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
