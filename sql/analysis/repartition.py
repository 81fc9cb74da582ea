"""Re-keying: a stream input whose key is not the join expression gets a
:class:`splice.sql.plan.RepartitionStep` keyed by it (one per input and key, shared
by the statements that need it)."""

from __future__ import annotations

from splice.sql.analysis.base import AnalyzerBase
from splice.sql.columns import KEY
from splice.sql.conditions import SplitCondition
from splice.sql.plan import Kind, RepartitionStep, Step
from splice.sql.scope import Compiled, Input
from splice.sql.types import struct_type
from sqlglot import exp


class Repartitioner(AnalyzerBase):
    """Re-keys the stream inputs of a join."""

    def _repartitioned(self, left: Input, right: Input, condition: SplitCondition
                       ) -> tuple[Input, Input]:
        """Re-key each stream input whose key is not the join expression."""
        out = []
        for inp in (left, right):
            if inp.relation.kind != Kind.STREAM or not condition.equalities:
                out.append(inp)
                continue
            exprs = [e.left if inp.side == "l" else e.right for e in condition.equalities]
            if _is_key(exprs, inp):
                out.append(inp)
                continue
            out.append(self._repartition(inp, exprs))
        return out[0], out[1]

    def _repartition(self, inp: Input, exprs: list[Compiled]) -> Input:
        """A step re-keying ``inp`` by the join expressions; one already made
        for the same input and key by an earlier statement is reused."""
        unqualified = [e.node.transform(_strip_side) for e in exprs if e.node is not None]
        if len(unqualified) == 1:
            key_sql, key_type = unqualified[0].sql(dialect="spark"), exprs[0].type
        else:
            key_sql = "named_struct(" + ", ".join(
                f"'k{i}', {n.sql(dialect='spark')}" for i, n in enumerate(unqualified)) + ")"
            key_type = struct_type([(f"k{i}", e.type) for i, e in enumerate(exprs)])
        existing = next((s for s in self.steps if isinstance(s, RepartitionStep)
                         and s.inputs == (inp.step_id,) and s.key == key_sql), None)
        if existing is not None:
            step: Step = existing
        else:
            label = "_".join(n.name if isinstance(n, exp.Column) else "expr"
                             for n in unqualified)
            relation = inp.relation.model_copy(update={
                "key_type": key_type, "key_columns": _key_columns(exprs, inp)})
            step = self._add(RepartitionStep(
                id=self._fresh_id(f"{inp.step_id}_by_{label}"), inputs=(inp.step_id,),
                relation=relation, where=self.stmt.where, sql=self.stmt.parsed.text,
                key=key_sql,
            ))
        return Input(side=inp.side, step_id=step.id, relation=step.relation, views=inp.views,
                     position=inp.position, node=inp.node)


def _is_key(exprs: list[Compiled], inp: Input) -> bool:
    """Whether the join expressions are exactly the input's key."""
    if len(exprs) == 1 and exprs[0].node is not None:
        node = exprs[0].node
        if isinstance(node, exp.Column) and node.name == KEY:
            return True
    names = []
    for e in exprs:
        node = e.node
        if not isinstance(node, exp.Column):
            return False
        names.append(node.name)
    return bool(names) and tuple(names) == inp.relation.key_columns


def _key_columns(exprs: list[Compiled], inp: Input) -> tuple[str, ...]:
    names = [e.node.name for e in exprs if isinstance(e.node, exp.Column)]
    return tuple(names) if len(names) == len(exprs) == 1 else ()


def _strip_side(n: exp.Expression) -> exp.Expression:
    if isinstance(n, exp.Column) and n.table in ("l", "r"):
        return exp.column(n.this.copy())
    return n
