"""Stream-table joins: each stream record looks the table up as it stands.

The stream input is read incrementally. For every micro-batch, the table is
read afresh from its Delta table (so table rows written by an upstream step
in this run are seen, ksqlDB's "load the table first") and joined with the
batch's records. Only stream records trigger output; a table change does not
re-emit. RIGHT JOIN with the table on the left is the mirror of LEFT JOIN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.query import Sink, StepQuery
from joins.explain import ExplainNode, duration
from joins.physical.base import PhysicalJoin
from joins.physical.late_match import LateMatch, records_of, tagged
from joins.strategy import Strategy
from sql.plan import JoinType, Kind, Relation

if TYPE_CHECKING:
    from engine.io import StepIO


def has_fact(relation: Relation) -> Column:
    """A stream record whose value columns are all NULL carries no fact, and
    joins skip it (ksqlDB); read as a table the same record is a tombstone."""
    if not relation.columns:
        return F.lit(True)
    return F.expr(" OR ".join(f"`{c.name}` IS NOT NULL" for c in relation.columns))


class StreamTableLookup(PhysicalJoin):
    strategy: ClassVar[Strategy] = Strategy.STREAM_TABLE_LOOKUP

    @property
    def stream_side(self) -> str:
        return "l" if self.step.left_kind == Kind.STREAM else "r"

    @property
    def table_side(self) -> str:
        return "r" if self.stream_side == "l" else "l"

    def _input(self, side: str) -> str:
        return self.step.inputs[0 if side == "l" else 1]

    def _filter(self, side: str) -> str | None:
        return self.step.left_filter if side == "l" else self.step.right_filter

    @property
    def how(self) -> str:
        outer = {JoinType.LEFT, JoinType.RIGHT}
        return "left" if self.step.join_type in outer else "inner"

    def streamed_inputs(self) -> tuple[str, ...]:
        if self.step.late_match_retention_ms is not None:  # a table change can emit
            return self.step.inputs
        return (self._input(self.stream_side),)

    def explain(self) -> ExplainNode:
        s, t = self.stream_side, self.table_side
        return ExplainNode(
            name="StreamTableLookupJoin",
            props={**self.common_props(),
                   "stream": f"{s} = {self._input(s)}",
                   "table": f"{t} = {self._input(t)} (read afresh every micro-batch)",
                   "emits": self._emits()},
            children=(
                ExplainNode(name="StreamScan", props={
                    "step": self._input(s), "filter": self._filter(s) or "",
                    "skips": "records whose value columns are all NULL"}),
                ExplainNode(name="TableSnapshot", props={
                    "step": self._input(t), "filter": self._filter(t) or ""}),
            ),
        )

    def _joiner(self) -> Callable[[DataFrame, DataFrame, str], DataFrame]:
        s, t = self.stream_side, self.table_side
        stream_filter, table_filter = self._filter(s), self._filter(t)

        def join(records: DataFrame, table: DataFrame, how: str) -> DataFrame:
            left = records.alias(s)
            if stream_filter:
                left = left.where(F.expr(stream_filter))
            right = table.alias(t)
            if table_filter:
                right = right.where(F.expr(table_filter))
            return left.join(right, self.match_condition(), how)

        return join

    def _emits(self) -> str:
        retention = self.step.late_match_retention_ms
        if retention is None:
            return "on stream records only; table changes do not re-emit"
        return ("on stream records; a record without a table row is kept for "
                f"{duration(retention)} of event time (join.late.match.retention) and "
                "joined once when its table row arrives")

    def build(self, io: StepIO) -> StepQuery:
        s, t = self.stream_side, self.table_side
        stream_step = io.pipeline.step(self._input(s))
        stream = io.read_stream(stream_step.id).where(has_fact(stream_step.relation))
        table_id = self._input(t)
        join = self._joiner()
        if self.step.late_match_retention_ms is not None:
            return self._with_late_match(io, stream, join)

        joined = self.output(join(stream, io.read_table(table_id), self.how))
        return StepQuery(stream=joined)

    def _with_late_match(self, io: StepIO, stream: DataFrame,
                         join: Callable[[DataFrame, DataFrame, str], DataFrame]) -> StepQuery:
        table_id = self._input(self.table_side)
        assert self.step.late_match_retention_ms is not None
        late = LateMatch(
            pending_path=f"{io.checkpoint(self.step)}/splice_late_match",
            retention_ms=self.step.late_match_retention_ms,
            stream_side=self.stream_side, table_side=self.table_side,
            preserve_unmatched=self.how == "left", join=join, output=self.output,
            read_table=lambda: io.read_table(table_id))

        def batch(tagged_rows: DataFrame) -> DataFrame:  # the output's layout
            return self.output(join(records_of(tagged_rows), io.read_table(table_id),
                                    self.how))

        return StepQuery(stream=tagged(stream, io.read_changes(table_id)), batch=batch,
                         sink=Sink.CUSTOM, writer=late.write)
