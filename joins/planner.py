"""From a logical join step to its physical join."""

from __future__ import annotations

from joins.physical.base import PhysicalJoin
from joins.physical.lookup import StreamTableLookup
from joins.physical.table_table import IncrementalTableJoin
from joins.strategy import Strategy, choose_strategy
from sql.errors import Position, SqlError
from sql.plan import JoinStep

PHYSICAL: dict[Strategy, type[PhysicalJoin]] = {
    Strategy.STREAM_TABLE_LOOKUP: StreamTableLookup,
    Strategy.TABLE_TABLE: IncrementalTableJoin,
}


def physical_join(step: JoinStep) -> PhysicalJoin:
    """The physical join for ``step``; a positioned error when Splice cannot
    run that strategy (yet)."""
    strategy = choose_strategy(step)
    where = Position(step.where.file, step.where.line, step.where.col)
    if step.late_match_retention_ms is not None and strategy == Strategy.STREAM_TABLE_LOOKUP:
        raise SqlError(where, "join.late.match.retention (re-emitting a LEFT join's unmatched "
                       "stream records when their table row arrives) is not supported yet",
                       "remove the SET; unmatched records are emitted once, null-padded")
    if strategy == Strategy.INTERVAL and step.window is None:
        # The analyzer lets a CROSS JOIN of two streams through without one.
        raise SqlError(where, f"a stream-stream {step.join_type.value} JOIN needs a window: "
                       "without one every record would be kept forever, waiting for a match",
                       "add WITHIN, for example '... CROSS JOIN b WITHIN 5 MINUTES'")
    variant = PHYSICAL.get(strategy)
    if variant is None:
        raise SqlError(where, f"the {strategy.value} is not supported yet",
                       "see the project's open issues for when it arrives")
    return variant(step=step)
