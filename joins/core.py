"""The join core that every join executor shares, and the executor that
runs a join node through its variant's query."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from splice.engine.io import KEY, ROWTIME, StepIO
from splice.engine.query import Executor, StepQuery
from splice.physical.joins import JoinNode
from splice.sql.plan import JoinStep

N = TypeVar("N", bound=JoinNode)


class JoinQuery(ABC, Generic[N]):
    """The Spark query of one join node.

    Variants differ in how they read their inputs and keep state; they share
    how the match condition is formed from the step's equalities and residual
    predicate, and how a joined row becomes an output row.
    """

    def __init__(self, node: N) -> None:
        self.node = node

    @property
    def step(self) -> JoinStep:
        return self.node.step

    @abstractmethod
    def build(self, io: StepIO) -> StepQuery: ...

    # -- the join core ------------------------------------------------------
    def match_condition(self) -> Column:
        parts = self.node.equality_sql()
        if self.step.residual:
            parts.append(self.step.residual)
        return F.expr(" AND ".join(parts)) if parts else F.lit(True)

    def output(self, joined: DataFrame) -> DataFrame:
        """The stored layout of joined rows: WHERE after the join, then
        ``_key``, the projected value columns, ``ROWTIME``."""
        if self.step.post_filter:
            joined = joined.where(F.expr(self.step.post_filter))
        return joined.select(
            F.expr(self.step.key).alias(KEY),
            *[F.expr(p.expr).alias(p.name) for p in self.step.select],
            F.expr(self.step.rowtime).alias(ROWTIME),
        )


class JoinExecutor(Executor[N]):
    """Runs a join node with its variant's :class:`JoinQuery`."""

    def __init__(self, query_class: type[JoinQuery[N]]) -> None:
        self.query_class = query_class

    def query(self, node: N, io: StepIO) -> StepQuery:
        return self.query_class(node).build(io)
