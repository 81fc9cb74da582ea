"""Stream-table joins: each stream record looks the table up as it stands.

The stream input is read incrementally. For every micro-batch, the table is
read afresh from its Delta table (so table rows written by an upstream step
in this run are seen, ksqlDB's "load the table first") and joined with the
batch's records. Only stream records trigger output; a table change does not
re-emit. RIGHT JOIN with the table on the left is the mirror of LEFT JOIN.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from splice.engine.io import StepIO, has_fact
from splice.engine.query import Sink, StepQuery
from splice.joins.core import JoinQuery
from splice.joins.late_match import LateMatch, records_of, tagged
from splice.physical.joins import StreamTableLookup


class LookupQuery(JoinQuery[StreamTableLookup]):
    def _joiner(self) -> Callable[[DataFrame, DataFrame, str], DataFrame]:
        s, t = self.node.stream_side, self.node.table_side
        stream_filter, table_filter = self.node.filter_of(s), self.node.filter_of(t)

        def join(records: DataFrame, table: DataFrame, how: str) -> DataFrame:
            left = records.alias(s)
            if stream_filter:
                left = left.where(F.expr(stream_filter))
            right = table.alias(t)
            if table_filter:
                right = right.where(F.expr(table_filter))
            return left.join(right, self.match_condition(), how)

        return join

    def build(self, io: StepIO) -> StepQuery:
        s, t = self.node.stream_side, self.node.table_side
        stream_step = io.pipeline.step(self.node.input_of(s))
        stream = io.read_stream(stream_step.id).where(has_fact(stream_step.relation))
        table_id = self.node.input_of(t)
        join = self._joiner()
        if self.step.late_match_retention_ms is not None:
            return self._with_late_match(io, stream, join)

        joined = self.output(join(stream, io.read_table(table_id), self.node.how))
        return StepQuery(stream=joined)

    def _with_late_match(self, io: StepIO, stream: DataFrame,
                         join: Callable[[DataFrame, DataFrame, str], DataFrame]) -> StepQuery:
        table_id = self.node.input_of(self.node.table_side)
        assert self.step.late_match_retention_ms is not None
        late = LateMatch(
            pending_path=f"{io.checkpoint(self.step)}/splice_late_match",
            retention_ms=self.step.late_match_retention_ms,
            stream_side=self.node.stream_side, table_side=self.node.table_side,
            preserve_unmatched=self.node.how == "left", join=join, output=self.output,
            read_table=lambda: io.read_table(table_id))

        def batch(tagged_rows: DataFrame) -> DataFrame:  # the output's layout
            return self.output(join(records_of(tagged_rows), io.read_table(table_id),
                                    self.node.how))

        return StepQuery(stream=tagged(stream, io.read_changes(table_id)), batch=batch,
                         sink=Sink.CUSTOM, writer=late.write)
