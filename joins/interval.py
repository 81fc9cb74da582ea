"""Stream-stream joins: Spark's symmetric hash join over an event-time window.

Both inputs are read as streams; every record is kept in the join's state
until its window closes, and matched against the other input's records as
they arrive. The language's rules (LANGUAGE.md, "Stream-stream windows") are
mapped onto Spark's watermark machinery as follows (``T`` is the stream time,
the largest ``ROWTIME`` seen on either input; ``g`` the grace period; a window
``-before <= r.ROWTIME - l.ROWTIME <= after``):

* Each input carries one watermark column, its ``ROWTIME`` shifted by the
  part of the window that keeps its records open: ``l.ROWTIME + after`` with
  delay ``after + g`` on the left, ``r.ROWTIME + before`` with delay
  ``before + g`` on the right. Each input's watermark is then ``max ROWTIME -
  g``, and with ``multipleWatermarkPolicy=max`` the query's watermark is
  ``W = T - g``.
* Spark drops an input row whose watermark column is ``<= W``: a left record
  is late when ``l + after + g <= T``, a right one when ``r + before + g <=
  T``; that is, when its window has closed (endpoints included).
* The window is written as two strict comparisons of one side's watermark
  column with the other side's *bound* column (``ROWTIME + before + after +
  1 µs``): ``r.wm < l.bound`` is exactly ``r <= l + after`` and ``l.wm <
  r.bound`` exactly ``l <= r + before`` (timestamps are whole microseconds).
  Spark solves each comparison for the state it can evict: left state rows
  with ``l.wm <= W`` (``T >= l + after + g``), right ones with ``r.wm <= W``
  (``T >= r + before + g``), so a record's window closes exactly when the
  language says, and an outer join emits its null-padded row then.

See docs/decisions/README.md ("Stream-stream joins (physical)") for why the bound column is a
different column from the watermark column, and what that relies on.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from splice.engine.io import ROWTIME, StepIO, has_fact
from splice.engine.query import StepQuery
from splice.joins.core import JoinQuery
from splice.physical.joins import IntervalJoin
from splice.sql.plan import JoinType

# The columns the join adds to each side; their names cannot clash with a
# user's (the analyzer names columns after the SQL, never with '__splice').
WM = "__splice_wm_{side}"
BOUND = "__splice_bound_{side}"
CROSS_KEY = "__splice_cross_{side}"

SPARK_HOW = {
    JoinType.INNER: "inner",
    JoinType.CROSS: "inner",
    JoinType.LEFT: "left_outer",
    JoinType.RIGHT: "right_outer",
    JoinType.FULL: "full_outer",
}


def shift(column: Column, micros: int) -> Column:
    """A timestamp moved by a whole number of microseconds, exactly."""
    return F.timestamp_micros(F.unix_micros(column) + F.lit(micros))


class IntervalQuery(JoinQuery[IntervalJoin]):
    def _side(self, io: StepIO, side: str) -> DataFrame:
        w = self.node.window
        input_id = self.step.inputs[0 if side == "l" else 1]
        relation = io.pipeline.step(input_id).relation
        df = io.read_stream(input_id).where(has_fact(relation))
        side_filter = self.step.left_filter if side == "l" else self.step.right_filter
        if side_filter:
            # The filter is written over the side's alias (l.x, r.y).
            df = df.alias(side).where(F.expr(side_filter))
        rowtime = F.col(ROWTIME)
        kept = [F.col(f"`{c}`") for c in df.columns
                if c != ROWTIME or self.node.rowtime_in_state]
        extra = [
            shift(rowtime, self.node.open_ms(side) * 1000).alias(WM.format(side=side)),
            shift(rowtime, (w.before_ms + w.after_ms) * 1000 + 1).alias(BOUND.format(side=side)),
        ]
        if self.node.constant_key:
            # Not a literal: a literal would be folded into 'true' and the join
            # would have no equality again.
            extra.append(F.coalesce(F.unix_micros(rowtime) * 0, F.lit(0))
                         .alias(CROSS_KEY.format(side=side)))
        return (df.select(*kept, *extra)
                .withWatermark(WM.format(side=side),
                               f"{self.node.open_ms(side) + w.grace_ms} milliseconds")
                .alias(side))

    def condition(self) -> Column:
        """Equalities, the window (as Spark can solve it for eviction), the
        residual."""
        parts = self.node.equality_sql()
        # Spark's streaming join looks its keys up in its state by value, so
        # a NULL key found the other side's NULL keys (SQL's '=' never
        # matches NULL); the condition says it again after the lookup.
        parts += [f"({e.left}) IS NOT NULL" for e in self.step.equalities]
        if self.node.constant_key:
            parts.append(f"l.{CROSS_KEY.format(side='l')} = r.{CROSS_KEY.format(side='r')}")
        parts.append(f"r.{WM.format(side='r')} < l.{BOUND.format(side='l')}")
        parts.append(f"l.{WM.format(side='l')} < r.{BOUND.format(side='r')}")
        if self.step.residual:
            parts.append(f"({self.step.residual})")
        return F.expr(" AND ".join(parts))

    def _restored(self, joined: DataFrame, left: DataFrame, right: DataFrame) -> DataFrame:
        """Each side again as ``l`` / ``r`` with its own columns and ROWTIME
        (NULL on the missing side of a null-padded row)."""
        if self.node.rowtime_in_state:
            return joined
        sides = []
        for side, df in (("l", left), ("r", right)):
            columns = [F.col(f"{side}.`{c}`").alias(c) for c in df.columns
                       if not c.startswith("__splice_")]
            wm = F.col(f"{side}.{WM.format(side=side)}")
            rowtime = shift(wm, -self.node.open_ms(side) * 1000).alias(ROWTIME)
            sides.append(F.struct(*columns, rowtime).alias(side))
        return joined.select(*sides)

    def build(self, io: StepIO) -> StepQuery:
        left, right = self._side(io, "l"), self._side(io, "r")
        joined = left.join(right, self.condition(), SPARK_HOW[self.step.join_type])
        rows = self.output(self._restored(joined, left, right))
        return StepQuery(stream=rows)
