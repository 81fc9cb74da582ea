"""From a logical join step to its physical join node."""

from __future__ import annotations

from splice.joins.nodes import (
    AsofJoin,
    IncrementalTableJoin,
    IntervalJoin,
    JoinNode,
    StreamTableLookup,
    UnsupportedJoin,
)
from splice.joins.strategy import Strategy, choose_strategy
from splice.sql.errors import SqlError
from splice.sql.plan import JoinStep

# One line per join variant: the strategy it runs, its node.
VARIANTS: dict[Strategy, type[JoinNode]] = {
    Strategy.STREAM_TABLE_LOOKUP: StreamTableLookup,
    Strategy.INTERVAL: IntervalJoin,
    Strategy.TABLE_TABLE: IncrementalTableJoin,
    Strategy.ASOF: AsofJoin,
}


def physical_join(step: JoinStep) -> JoinNode:
    """The physical join node for ``step``; a positioned error when Splice
    cannot run that strategy (yet)."""
    strategy = choose_strategy(step)
    where = step.where
    if strategy == Strategy.INTERVAL and step.window is None:
        # The analyzer lets a CROSS JOIN of two streams through without one.
        raise SqlError(where, f"a stream-stream {step.join_type.value} JOIN needs a window: "
                       "without one every record would be kept forever, waiting for a match",
                       "add WITHIN, for example '... CROSS JOIN b WITHIN 5 MINUTES'")
    variant = VARIANTS.get(strategy)
    if variant is None:
        raise SqlError(where, f"the {strategy.value} is not supported yet",
                       "see the project's open issues for when it arrives")
    return variant(step=step)


def explainable_join(step: JoinStep) -> JoinNode:
    """The node EXPLAIN shows: the physical join, or, for a join Splice
    cannot run yet, the logical join with the reason."""
    try:
        return physical_join(step)
    except SqlError as err:
        return UnsupportedJoin(step=step, reason=err.rule)
