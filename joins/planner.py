"""From a logical join step to its physical join."""

from __future__ import annotations

from joins.physical.asof import AsofJoin
from joins.physical.base import PhysicalJoin
from joins.physical.interval import IntervalJoin
from joins.physical.lookup import StreamTableLookup
from joins.physical.table_table import IncrementalTableJoin
from joins.strategy import Strategy, choose_strategy
from sql.errors import SqlError
from sql.plan import JoinStep

PHYSICAL: dict[Strategy, type[PhysicalJoin]] = {
    Strategy.STREAM_TABLE_LOOKUP: StreamTableLookup,
    Strategy.INTERVAL: IntervalJoin,
    Strategy.TABLE_TABLE: IncrementalTableJoin,
    Strategy.ASOF: AsofJoin,
}


def physical_join(step: JoinStep) -> PhysicalJoin:
    """The physical join for ``step``; a positioned error when Splice cannot
    run that strategy (yet)."""
    strategy = choose_strategy(step)
    where = step.where
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
