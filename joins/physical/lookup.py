"""Stream-table joins: each stream record looks the table up as it stands.

The stream input is read incrementally. For every micro-batch, the table is
read afresh from its Delta table (so table rows written by an upstream step
in this run are seen, ksqlDB's "load the table first") and joined with the
batch's records. Only stream records trigger output; a table change does not
re-emit. RIGHT JOIN with the table on the left is the mirror of LEFT JOIN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from engine.query import StepQuery
from joins.explain import ExplainNode
from joins.physical.base import PhysicalJoin
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
        return (self._input(self.stream_side),)

    def explain(self) -> ExplainNode:
        s, t = self.stream_side, self.table_side
        return ExplainNode(
            name="StreamTableLookupJoin",
            props={**self.common_props(),
                   "stream": f"{s} = {self._input(s)}",
                   "table": f"{t} = {self._input(t)} (read afresh every micro-batch)",
                   "emits": "on stream records only; table changes do not re-emit"},
            children=(
                ExplainNode(name="StreamScan", props={
                    "step": self._input(s), "filter": self._filter(s) or "",
                    "skips": "records whose value columns are all NULL"}),
                ExplainNode(name="TableSnapshot", props={
                    "step": self._input(t), "filter": self._filter(t) or ""}),
            ),
        )

    def build(self, io: StepIO) -> StepQuery:
        s, t = self.stream_side, self.table_side
        stream_step = io.pipeline.step(self._input(s))
        stream = io.read_stream(stream_step.id).where(has_fact(stream_step.relation))
        stream_filter = self._filter(s)
        table_filter = self._filter(t)
        table_id = self._input(t)

        def batch(records: DataFrame) -> DataFrame:
            left = records.alias(s)
            if stream_filter:
                left = left.where(F.expr(stream_filter))
            table = io.read_table(table_id).alias(t)
            if table_filter:
                table = table.where(F.expr(table_filter))
            return self.output(left.join(table, self.match_condition(), self.how))

        return StepQuery(stream=stream, batch=batch)
