"""The join core that every physical join variant shares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from joins.explain import ExplainNode
from joins.strategy import Strategy
from sql.columns import KEY, ROWTIME
from sql.plan import JoinStep

if TYPE_CHECKING:
    from engine.io import StepIO
    from engine.query import StepQuery


class PhysicalJoin(BaseModel, ABC):
    """A join step and the operator that computes it.

    Variants differ in how they read their inputs and keep state; they share
    how the match condition is formed from the step's equalities and residual
    predicate, and how a joined row becomes an output row.
    """

    model_config = ConfigDict(frozen=True)

    strategy: ClassVar[Strategy]
    step: JoinStep

    @abstractmethod
    def explain(self) -> ExplainNode: ...

    @abstractmethod
    def build(self, io: StepIO) -> StepQuery: ...

    def streamed_inputs(self) -> tuple[str, ...]:
        """The inputs whose new rows make the join emit."""
        return self.step.inputs

    # -- the join core ------------------------------------------------------
    def equality_sql(self) -> list[str]:
        return [f"({e.left}) = ({e.right})" for e in self.step.equalities]

    def match_condition(self) -> Column:
        parts = self.equality_sql()
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

    def common_props(self) -> dict[str, str]:
        s = self.step
        return {
            "type": s.join_type.value,
            "predicate": " AND ".join(e.text for e in s.equalities),
            "residual": s.residual or "",
            "after join": s.post_filter or "",
            "key": s.key,
            "rowtime": s.rowtime,
            "output": "[" + ", ".join(p.name for p in s.select) + "]",
        }
