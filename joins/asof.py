"""ASOF joins, maintained incrementally as a table keyed by the left row's key.

Each left row is paired with the right row nearest to it that satisfies the
inequality, among the right rows that satisfy the equalities; among equally
near right rows the smallest ``_key`` wins (NULL last), then the latest to
arrive. A left row's match can only change when a row with its equality
values arrives (or changes, for a table input), so every micro-batch:

1. ``V``: the equality values of every new row of either input (for a table
   input: every changed row, pre- and post-image);
2. the left rows with a value in ``V`` are recomputed from the inputs' stored
   rows with a value in ``V``: a batch ASOF join of those rows (join on the
   equalities and the inequality, then keep the best right row per left key);
3. one MERGE, marked with Delta's idempotent-DML ids, upserts the recomputed
   rows and deletes the result rows of affected left keys that have no row
   any more (a deleted left table row, an INNER row whose match went away).

A table input is read as it stands (one row per key). A stream input has no
arrival order in its Delta table, and "the latest to arrive" needs one: the
join keeps an arrival log of its stream inputs (their rows with the
micro-batch id and position that brought them), next to its checkpoint so
that the two are reset together. Stream inputs are read one file per micro-batch, so a
batch's rows keep their arrival order, as in a table materialization. A left
stream is read as a table: the latest record of a key is its row.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType
from splice.engine.io import KEY, StepIO, append, ensure_table, has_fact, merge_by_key
from splice.engine.query import BatchTarget, Sink, StepQuery
from splice.joins.core import JoinQuery
from splice.physical.joins import AsofJoin
from splice.sql.plan import JoinType, Kind

# Columns the join adds to stored rows; the analyzer never names a column so.
BATCH = "__splice_batch"  # the micro-batch that brought a stream row
POS = "__splice_pos"  # its position in that micro-batch
JV = "__splice_jv"  # its equality values, as JSON


class AsofQuery(JoinQuery[AsofJoin]):
    def _values(self, side: str) -> Column:
        """The equality values of a row of ``side`` (aliased so), comparable
        across sides: JSON of the values (numbers of the integral types print
        alike)."""
        exprs = [e.left if side == "l" else e.right for e in self.step.equalities]
        return F.to_json(F.struct(*[F.expr(x).alias(f"v{i}") for i, x in enumerate(exprs)]))

    def _order(self) -> list[Column]:
        """Best right row first: nearest, smallest key, latest arrival."""
        right = F.expr(self.node.inequality.right)
        return [right.desc() if self.node.inequality.nearest_is_largest else right.asc(),
                F.col(f"r.{KEY}").asc_nulls_last(),
                F.col(f"r.{BATCH}").desc(), F.col(f"r.{POS}").desc()]

    # -- build --------------------------------------------------------------
    def build(self, io: StepIO) -> StepQuery:
        logged = tuple(side for side in ("l", "r") if self.node.kind_of(side) == Kind.STREAM)
        log = f"{io.checkpoint(self.step)}/splice_asof_arrivals"
        feeds = [self._feed(io, side, side in logged) for side in ("l", "r")]
        stream = feeds[0].unionByName(feeds[1], allowMissingColumns=True)
        kept = ["__side", JV, *(f"__row_{side}" for side in logged)]

        def stored(side: str) -> DataFrame:
            """The input's rows as they stand now, with their arrival and
            equality values."""
            if side in logged:
                return (io.spark.read.format("delta").load(log).where(f"__side = '{side}'")
                        .select(f"__row_{side}.*", JV, BATCH, POS))
            table = io.read_table(self.node.input_of(side)).alias(side)
            return table.select(f"{side}.*", self._values(side).alias(JV),
                                F.lit(0).cast("long").alias(BATCH),
                                F.lit(0).cast("long").alias(POS))

        def recompute(changes: DataFrame) -> tuple[DataFrame, DataFrame]:
            values = changes.select(JV).distinct()
            left = self._affected(stored("l"), values, "l" in logged)
            right = self._affected(stored("r"), values, False)
            keys = left.select(KEY)
            if "l" not in logged:  # a deleted or re-valued left table row
                keys = keys.union(changes.where("__side = 'l'").select(F.col("__k").alias(KEY)))
            return self._join(left.alias("l"), right.alias("r")), keys.distinct()

        def write(changes: DataFrame, target: BatchTarget) -> None:
            changes = changes.persist()
            try:
                new = changes.where(F.col("__side").isin(*logged)).select(*kept)
                if logged and not new.isEmpty():  # a replay has none either: no mark
                    append(new.withColumn(BATCH, F.lit(target.batch_id).cast("long"))
                           .withColumn(POS, F.monotonically_increasing_id()),
                           log, target.txn_app, target.batch_id)
                self._merge(*recompute(changes), target)
            finally:
                changes.unpersist()

        if logged:
            fields = [stream.schema[c] for c in kept]
            ensure_table(io.spark, log, StructType([*fields, StructField(BATCH, LongType()),
                                                    StructField(POS, LongType())]))
        return StepQuery(stream=stream, batch=lambda df: recompute(df)[0], sink=Sink.CUSTOM,
                         writer=write)

    def _feed(self, io: StepIO, side: str, logged: bool) -> DataFrame:
        """One input's new rows as a stream: its side and equality values; a
        stream's whole rows for the arrival log; a left table's changed keys."""
        step_id = self.node.input_of(side)
        if logged:
            relation = io.pipeline.step(step_id).relation
            rows = (io.read_stream(step_id, maxFilesPerTrigger="1")
                    .where(has_fact(relation)).alias(side))
            whole = F.struct(*[F.col(f"{side}.`{c}`") for c in rows.columns])
            return rows.select(F.lit(side).alias("__side"), self._values(side).alias(JV),
                               whole.alias(f"__row_{side}"))
        feed = io.read_changes(step_id).alias(side)
        columns = [F.lit(side).alias("__side"), self._values(side).alias(JV)]
        if side == "l":  # a changed left key's result row may have to go
            columns.append(F.col(f"l.{KEY}").alias("__k"))
        return feed.select(*columns)

    @staticmethod
    def _affected(rows: DataFrame, values: DataFrame, latest_per_key: bool) -> DataFrame:
        """The stored rows whose equality values are in ``values``; of a left
        stream, the latest record of each key (a key whose latest record has
        other values is not affected)."""
        if latest_per_key:
            touched = (rows.join(values, JV, "left_semi")
                       .select(F.col(KEY).alias("__touched")).distinct())
            rows = rows.join(touched, rows[KEY].eqNullSafe(touched["__touched"]), "left_semi")
            newest = Window.partitionBy(KEY).orderBy(F.col(BATCH).desc(), F.col(POS).desc())
            rows = (rows.withColumn("__n", F.row_number().over(newest))
                    .where("__n = 1").drop("__n"))
        return rows.join(values, JV, "left_semi")

    def _join(self, left: DataFrame, right: DataFrame) -> DataFrame:
        """A batch ASOF join of the affected rows, in the stored layout."""
        if self.step.left_filter:
            left = left.where(F.expr(self.step.left_filter))
        if self.step.right_filter:
            right = right.where(F.expr(self.step.right_filter))
        ineq = self.node.inequality
        condition = self.match_condition() & F.expr(f"({ineq.left}) {ineq.op} ({ineq.right})")
        how = "left" if self.step.join_type == JoinType.LEFT else "inner"
        best = Window.partitionBy(F.col(f"l.{KEY}")).orderBy(*self._order())
        joined = (left.join(right, condition, how)
                  .withColumn("__rank", F.row_number().over(best)).where("__rank = 1"))
        return self.output(joined)

    def _merge(self, recomputed: DataFrame, keys: DataFrame, target: BatchTarget) -> None:
        """Recomputed rows replace their keys; an affected left key without a
        recomputed row is deleted; all in one idempotent MERGE."""

        keys = keys.select(F.col(KEY).alias("__gone"))
        gone = (keys.join(recomputed, keys["__gone"].eqNullSafe(recomputed[KEY]), "left_anti")
                .select(F.col("__gone").alias(KEY)))
        source = (recomputed.withColumn("__delete", F.lit(False))
                  .unionByName(gone.withColumn("__delete", F.lit(True)),
                               allowMissingColumns=True))
        merge_by_key(target.spark, target.path, source, "__delete", recomputed.columns,
                     target.txn_app, target.batch_id, target.step_id)
