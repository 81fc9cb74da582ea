"""Which physical join runs a logical join: decided here, and only here.

The language (``splice.sql.analyzer``) has already checked that the join is legal
(the compatibility table, the window requirement, the ON rules). This module
maps a legal join to the operator that computes it on Spark.
"""

from __future__ import annotations

from enum import StrEnum

from splice.sql.plan import JoinStep, Kind


class Strategy(StrEnum):
    STREAM_TABLE_LOOKUP = "stream-table lookup"
    INTERVAL = "interval join"
    TABLE_TABLE = "incremental table join"
    ASOF = "asof join"


def choose_strategy(step: JoinStep) -> Strategy:
    """(left kind, right kind) -> strategy. A stream joined with a table looks
    every stream record up in the table as it stands in its micro-batch; two
    streams need a window (an interval join); two tables are maintained
    incrementally. An ASOF join, of any two inputs, is maintained incrementally
    as a table keyed by its left rows."""
    if step.asof is not None:
        return Strategy.ASOF
    left, right = step.left_kind, step.right_kind
    if left != right:
        return Strategy.STREAM_TABLE_LOOKUP
    if left == Kind.STREAM:
        return Strategy.INTERVAL
    return Strategy.TABLE_TABLE
