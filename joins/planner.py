"""From a logical join step to its physical join."""

from __future__ import annotations

from joins.physical.base import PhysicalJoin
from joins.physical.lookup import StreamTableLookup
from joins.strategy import Strategy, choose_strategy
from sql.errors import Position, SqlError
from sql.plan import JoinStep

PHYSICAL: dict[Strategy, type[PhysicalJoin]] = {
    Strategy.STREAM_TABLE_LOOKUP: StreamTableLookup,
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
    variant = PHYSICAL.get(strategy)
    if variant is None:
        raise SqlError(where, f"the {strategy.value} is not supported yet",
                       "see the project's open issues for when it arrives")
    return variant(step=step)
