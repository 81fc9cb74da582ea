"""Table-table joins, maintained incrementally.

Each micro-batch is the union of the two input tables' change feeds. A change
can only affect result rows whose join value it carries (before or after the
change), so:

1. ``V``: the join values of every changed row, pre- and post-image;
2. ``L[V]`` / ``R[V]``: the current rows whose join value is in ``V`` (one
   scan of each input); ``AL`` / ``AR``: the changed left / right keys plus
   the keys of those rows (a changed key that still exists has its new value
   in ``V``);
3. every result row built from a key in ``AL`` or ``AR`` is stale (a
   primary- or foreign-key result is keyed by an input key, so those keys
   are its stale keys; a pair-keyed result is searched for them; see
   ``sql/table_keys.py``), and
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

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType
from splice.engine.io import KEY, StepIO, merge_by_key, table_files, table_rows
from splice.engine.query import BatchTarget, Sink, StepQuery
from splice.joins.core import JoinQuery
from splice.joins.table_plan import Plan, PlanSettings, choose, noted
from splice.joins.table_recompute import write_recomputed
from splice.physical.joins import IncrementalTableJoin
from splice.sql.plan import JoinType

_HOW = {JoinType.INNER: "inner", JoinType.LEFT: "left", JoinType.RIGHT: "right",
        JoinType.FULL: "full", JoinType.CROSS: "cross"}


class TableTableQuery(JoinQuery[IncrementalTableJoin]):

    def _join_values(self, side: str) -> list[Column]:
        """The side's join expressions, in the order of the equalities."""
        return [F.expr(e.left if side == "l" else e.right).alias(f"__jv{i}")
                for i, e in enumerate(self.step.equalities)]

    def _stale_keys(self, target: BatchTarget, affected_l: DataFrame,
                    affected_r: DataFrame, key_type: DataType) -> DataFrame:
        """The result keys of every result row built from an affected input
        key (``k``, of the result's ``key_type``).

        A primary-key or foreign-key result is keyed by an input's key, so the
        affected keys are the stale result keys themselves: no result row need
        be read (a key that has no result row deletes nothing). A pair-keyed
        result (``{l, r}``) is searched for rows whose ``l`` or ``r`` is
        affected."""
        mode = self.step.key_mode
        if mode != "pair":
            parts = {"primary": (affected_l, affected_r), "left": (affected_l,),
                     "right": (affected_r,)}[mode or "primary"]
            keys = [p.select(F.col("k").cast(key_type).alias("k")) for p in parts]
            return reduce(DataFrame.union, keys).distinct()

        existing = target.spark.read.format("delta").load(target.path)

        def by(part: str, affected: DataFrame) -> DataFrame:
            return existing.join(affected, F.col(f"{KEY}.{part}").eqNullSafe(
                affected["k"]), "left_semi").select(F.col(KEY).alias("k"))

        return by("l", affected_l).union(by("r", affected_r)).distinct()

    def build(self, io: StepIO) -> StepQuery:
        left_id, right_id = self.step.inputs
        key_types = {side: io.read_table(step_id).schema[KEY].dataType
                     for step_id, side in ((left_id, "l"), (right_id, "r"))}

        def changes(step_id: str, side: str) -> DataFrame:
            """Both inputs' change feeds in one layout: the side, its key in
            its own column (the two keys may differ in type), and the join
            values of the changed row (Spark's union widens the two sides'
            types, which the analyzer has checked are of one family)."""
            other = "r" if side == "l" else "l"
            return io.read_changes(step_id).alias(side).select(
                F.lit(side).alias("__side"), F.col(KEY).alias(f"__k{side}"),
                F.lit(None).cast(key_types[other]).alias(f"__k{other}"),
                *self._join_values(side))

        def matching(step_id: str, side: str, values: DataFrame) -> DataFrame:
            """The current rows of one input whose join value was changed (on
            either side). NULL matches NULL here, though never in the join: a
            changed row whose join value is NULL is recomputed too, and an
            outer join pads it (it would otherwise be deleted as stale and
            never written again)."""
            table = io.read_table(step_id).alias(side)
            if not self.step.equalities:  # one join value: every row is affected
                return table
            on = [F.expr(e.left if side == "l" else e.right).eqNullSafe(values[f"__jv{i}"])
                  for i, e in enumerate(self.step.equalities)]
            return table.join(values, reduce(Column.__and__, on), "left_semi")

        def change_values(changed: DataFrame, keep: Callable[[DataFrame], DataFrame]
                          ) -> tuple[DataFrame, int]:
            """The distinct join values of the changed rows, and their number
            (computed now, so that the joins below see the true size: a small
            change is broadcast, the first run's whole table is not)."""
            values = keep(changed.select(
                [f"__jv{i}" for i in range(len(self.step.equalities))]).distinct())
            return values, values.count()

        def recompute(changed: DataFrame, values: DataFrame,
                      keep: Callable[[DataFrame], DataFrame]
                      ) -> tuple[DataFrame, DataFrame, DataFrame]:
            """(the recomputed result rows, the affected left keys, the
            affected right keys); ``keep`` caches the inputs' current rows,
            which are read twice and must be the same rows both times (a
            table read again may have a newer version). What is derived from
            cached rows is not cached: Delta materializes the MERGE's
            source once (see ``_merge``), and each cache costs Spark a
            planning of its own (about 35 ms: 7.1 s of the 30 s the fk
            acceptance case's micro-batches took, with all of them
            cached)."""
            sides = ((left_id, "l"), (right_id, "r"))
            # Caching a side's rows plans its query, and planning a Delta
            # read computes the input's snapshot (two Spark jobs): the two
            # sides are planned side by side.
            with ThreadPoolExecutor(max_workers=2) as pool:
                rows = list(pool.map(lambda s: keep(matching(*s, values)), sides))
            # A changed key that still exists has its new join value in the
            # values, so it is among the matching rows too.
            affected = [changed.where(f"__side = '{side}'")
                        .select(F.col(f"__k{side}").alias("k"))
                        .union(current.select(F.col(KEY).alias("k"))).distinct()
                        for (_, side), current in zip(sides, rows, strict=True)]
            return self._joined(*rows), affected[0], affected[1]

        def first_rows(df: DataFrame) -> DataFrame:
            """The result of a micro-batch, for the output's schema."""
            return recompute(df, change_values(df, lambda d: d)[0], lambda d: d)[0]

        paths = [io.table_path(io.pipeline.step(s)) for s in (left_id, right_id)]
        read_downstream = bool(io.pipeline.downstream(self.step.id))
        PlanSettings.of(io.spark)  # a bad setting stops the run before it starts

        def write(changed: DataFrame, target: BatchTarget) -> None:
            cached: list[DataFrame] = []

            def keep(df: DataFrame) -> DataFrame:
                cached.append(df.persist(StorageLevel.MEMORY_AND_DISK))
                return cached[-1]

            try:
                keep(changed)
                settings = PlanSettings.of(target.spark)
                # Counted only when the plan is to be chosen: a set plan
                # needs no figures. Each figure is a Spark job of its own,
                # independent of the changed values' count, so they run
                # beside it (one after the other, they made `auto` 0.3 s
                # slower than the plan it chose, at 1M keys a side).
                auto = settings.wanted == "auto"
                with ThreadPoolExecutor(max_workers=len(paths) + 1) as pool:
                    rows = [pool.submit(table_rows, target.spark, p) for p in paths] if auto \
                        else []
                    # The files an incremental MERGE would rewrite matter
                    # only when no step reads the result (an overwrite is
                    # then the other plan's write).
                    files = (pool.submit(table_files, target.spark, target.path)
                             if auto and not read_downstream and self.step.equalities else None)
                    values, count = change_values(changed, keep)
                    choice = choose(count, sum(f.result() for f in rows) if auto else None,
                                    read_downstream, settings, one_value=not self.step.equalities,
                                    result_files=files.result() if files else None)
                with noted(target.spark, choice):
                    if choice.plan == Plan.INCREMENTAL:
                        self._merge(*recompute(changed, values, keep), target)
                    else:
                        whole = self._joined(io.read_table(left_id), io.read_table(right_id))
                        write_recomputed(whole, choice, target, keep)
            finally:
                # The last cached first: freeing a DataFrame that a cached one
                # is built on makes Spark plan the dependent one again (2.3 s
                # of the fk acceptance case's 30 s of micro-batches).
                for df in reversed(cached):
                    df.unpersist()

        stream = changes(left_id, "l").unionByName(changes(right_id, "r"))
        return StepQuery(stream=stream, batch=first_rows, sink=Sink.CUSTOM, writer=write)

    def _joined(self, left: DataFrame, right: DataFrame) -> DataFrame:
        """The result rows of the join of ``left`` and ``right`` (current
        rows of the two inputs, all or some)."""
        left, right = left.alias("l"), right.alias("r")
        if self.step.left_filter:
            left = left.where(F.expr(self.step.left_filter))
        if self.step.right_filter:
            right = right.where(F.expr(self.step.right_filter))
        return self.output(left.join(right, self.match_condition(), _HOW[self.step.join_type]))

    def _merge(self, recomputed: DataFrame, affected_l: DataFrame, affected_r: DataFrame,
               target: BatchTarget) -> None:
        """Recomputed rows replace their keys; stale rows that were not
        recomputed are deleted; all in one idempotent MERGE.

        The MERGE reads its source more than once (to find the files it
        touches, then to write); Delta materializes it first, since it
        holds the cached change batch (not only Delta scans), so it is
        computed once, from the cached inputs, and freed by Delta after."""
        stale = self._stale_keys(target, affected_l, affected_r,
                                 recomputed.schema[KEY].dataType)
        doomed = stale.join(recomputed.select(KEY), stale["k"].eqNullSafe(recomputed[KEY]),
                            "left_anti").select(F.col("k").alias(KEY))
        source = (recomputed.withColumn("__delete", F.lit(False))
                  .unionByName(doomed.withColumn("__delete", F.lit(True)),
                               allowMissingColumns=True))
        merge_by_key(target.spark, target.path, source, "__delete", recomputed.columns,
                     target.txn_app, target.batch_id, target.step_id)
