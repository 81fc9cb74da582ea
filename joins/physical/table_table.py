"""Table-table joins, maintained incrementally.

Each micro-batch is the union of the two input tables' change feeds. A change
can only affect result rows whose join value it carries (before or after the
change), so:

1. ``V``: the join values of every changed row, pre- and post-image;
2. ``L[V]`` / ``R[V]``: the current rows whose join value is in ``V`` (one
   scan of each input); ``AL`` / ``AR``: the changed left / right keys plus
   the keys of those rows (a changed key that still exists has its new value
   in ``V``);
3. every result row built from a key in ``AL`` or ``AR`` is stale (found
   through the result's key: see ``sql/table_keys.py``), and
   ``join(L[V], R[V])`` recomputes exactly those rows (any row matching an
   affected row has its join value in ``V``, so it is in the restricted
   inputs);
4. one MERGE into the result updates the recomputed rows, inserts the new
   ones and deletes the stale ones that are gone, marked with Delta's
   idempotent-DML ids so a replayed micro-batch writes nothing twice.

The result's change feed feeds the steps downstream. A join without
equalities (CROSS) has one join value: every change recomputes the whole
result, which EXPLAIN says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.io import KEY, merge_by_key
from engine.query import BatchTarget, Sink, StepQuery
from joins.explain import ExplainNode
from joins.physical.base import PhysicalJoin
from joins.strategy import Strategy
from sql.plan import JoinType

if TYPE_CHECKING:
    from engine.io import StepIO

_HOW = {JoinType.INNER: "inner", JoinType.LEFT: "left", JoinType.RIGHT: "right",
        JoinType.FULL: "full", JoinType.CROSS: "cross"}


class IncrementalTableJoin(PhysicalJoin):
    strategy: ClassVar[Strategy] = Strategy.TABLE_TABLE

    def _join_values(self, side: str) -> list[Column]:
        exprs = [e.left if side == "l" else e.right for e in self.step.equalities]
        if not exprs:
            return [F.lit(0).alias("__jv0")]
        return [F.expr(x).alias(f"__jv{i}") for i, x in enumerate(exprs)]

    def _stale(self, existing: DataFrame, affected_l: DataFrame,
               affected_r: DataFrame) -> DataFrame:
        """The result rows built from an affected input key, found through the
        result's own ``_key`` (keys are compared in their JSON form)."""
        mode = self.step.key_mode

        def by(part: str, keys: DataFrame) -> DataFrame:
            keyed = existing.withColumn("__kj", F.to_json(F.struct(F.expr(part).alias("k"))))
            return keyed.join(keys, keyed["__kj"] == keys["k"], "left_semi").select(KEY)

        if mode == "primary":
            return by(KEY, affected_l).union(by(KEY, affected_r))
        if mode == "left":
            return by(KEY, affected_l)
        if mode == "right":
            return by(KEY, affected_r)
        return by(f"{KEY}.l", affected_l).union(by(f"{KEY}.r", affected_r))

    def explain(self) -> ExplainNode:
        s = self.step
        cost = ("every change recomputes the whole result (no equality)" if not s.equalities
                else "a change recomputes only the result rows of its join values")
        return ExplainNode(
            name="IncrementalTableJoin",
            props={**self.common_props(), "result key": s.key_mode or "",
                   "maintained by": "MERGE of recomputed rows, DELETE of stale ones",
                   "incremental": cost},
            children=(
                ExplainNode(name="ChangeFeed", props={"step": s.inputs[0],
                                                      "filter": s.left_filter or ""}),
                ExplainNode(name="ChangeFeed", props={"step": s.inputs[1],
                                                      "filter": s.right_filter or ""}),
            ),
        )

    def build(self, io: StepIO) -> StepQuery:
        left_id, right_id = self.step.inputs

        def changes(step_id: str, side: str) -> DataFrame:
            feed = io.read_changes(step_id).alias(side)
            return feed.select(F.lit(side).alias("__side"), _key_json(side).alias("__k"),
                               self._value_json(side).alias("__jv"))

        def current(step_id: str, side: str) -> DataFrame:
            table = io.read_table(step_id).alias(side)
            return table.select(f"{side}.*", _key_json(side).alias(f"__k_{side}"),
                                self._value_json(side).alias(f"__jv_{side}"))

        def recompute(changed: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
            values = changed.select("__jv").distinct()
            rows, affected = [], []
            for step_id, side in ((left_id, "l"), (right_id, "r")):
                # The current rows with a changed join value: among them, every
                # changed key that still exists (its post-image is in V).
                matching = current(step_id, side).join(
                    values, F.col(f"__jv_{side}") == values["__jv"], "left_semi")
                affected.append(changed.where(f"__side = '{side}'").select(
                    F.col("__k").alias("k")).union(matching.select(
                        F.col(f"__k_{side}").alias("k"))).distinct())
                rows.append(matching.drop(f"__k_{side}", f"__jv_{side}").alias(side))
            lrows, rrows = rows
            if self.step.left_filter:
                lrows = lrows.where(F.expr(self.step.left_filter))
            if self.step.right_filter:
                rrows = rrows.where(F.expr(self.step.right_filter))
            joined = lrows.join(rrows, self.match_condition(), _HOW[self.step.join_type])
            return self.output(joined), affected[0], affected[1]

        def write(changed: DataFrame, target: BatchTarget) -> None:
            changed = changed.cache()
            try:
                self._merge(*recompute(changed), target)
            finally:
                changed.unpersist()

        stream = changes(left_id, "l").unionByName(changes(right_id, "r"))
        return StepQuery(stream=stream, batch=lambda df: recompute(df)[0], sink=Sink.CUSTOM,
                         writer=write)

    def _value_json(self, side: str) -> Column:
        return F.to_json(F.struct(*self._join_values(side)))

    def _merge(self, recomputed: DataFrame, affected_l: DataFrame, affected_r: DataFrame,
               target: BatchTarget) -> None:
        """Recomputed rows replace their keys; stale rows that were not
        recomputed are deleted; all in one idempotent MERGE."""
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(target.spark, target.path)
        stale = self._stale(table.toDF(), affected_l, affected_r).distinct()
        doomed = stale.join(recomputed.select(KEY), stale[KEY].eqNullSafe(recomputed[KEY]),
                            "left_anti")
        # MERGE reads its source more than once (to find the files it touches,
        # then to write), and the source reads the target: compute it once,
        # before the MERGE, and free it after (a long-lived process runs many
        # micro-batches; blocks left to the garbage collector filled the heap).
        source = (recomputed.withColumn("__delete", F.lit(False))
                  .unionByName(doomed.withColumn("__delete", F.lit(True)),
                               allowMissingColumns=True)
                  .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            source.count()
            merge_by_key(target.spark, target.path, source, "__delete", recomputed.columns,
                         target.txn_app, target.batch_id)
        finally:
            source.unpersist()


def _key_json(side: str) -> Column:
    """An input key in a form comparable across key types and sides."""
    return F.to_json(F.struct(F.col(f"{side}.{KEY}").alias("k")))
