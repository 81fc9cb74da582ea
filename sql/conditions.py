"""Splitting join conditions and filters by what they reference.

Lenses' ON rules: an equality whose two sides each reference exactly one
input is a join equality; a boolean expression over one input is a filter on
that input; AND combines them. An equality side that references both inputs,
and an OR that spans inputs, are rejected, naming the offending part. What
references both inputs and is not an equality (``a.ts > b.ts``) is returned
as a cross predicate: windows and residual predicates are made of those, and
the join kind decides whether it may have any.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from splice.sql.errors import Position, SqlError
from splice.sql.scope import Compiled, Scope
from sqlglot import exp


@dataclass
class EqualityPart:
    left: Compiled
    right: Compiled
    node: exp.EQ
    text: str
    left_node: exp.Expression
    right_node: exp.Expression


@dataclass
class SplitCondition:
    equalities: list[EqualityPart] = field(default_factory=list)
    left_only: list[Compiled] = field(default_factory=list)
    right_only: list[Compiled] = field(default_factory=list)
    constant: list[Compiled] = field(default_factory=list)
    cross: list[tuple[exp.Expression, Compiled]] = field(default_factory=list)


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition, parentheses removed."""
    parts: list[exp.Expression] = []
    stack = [node] if node is not None else []
    while stack:  # a loop: thousands of AND are a tree thousands deep
        current = stack.pop().unnest()
        if isinstance(current, exp.And):
            stack += [current.expression, current.this]
        else:
            parts.append(current)
    return parts


def and_all(parts: list[Compiled]) -> str | None:
    if not parts:
        return None
    return " AND ".join(f"({p.sql})" for p in parts)


def _names(scope: Scope, sides: set[str]) -> str:
    aliases = [i.alias for i in scope.inputs if i.side in sides]
    return " and ".join(aliases)


def joins_inputs(part: exp.Expression, scope: Scope, where: Position) -> bool:
    """Whether a conjunct relates the two inputs in a way ON accepts: an
    equality whose sides reference one input each, or a comparison of both
    inputs without OR (a window bound or a residual predicate). What ON
    rejects (an OR across inputs, an equality side over both) is not one:
    in WHERE it filters the joined rows."""
    if len(scope.compile(part, where).inputs) < 2 or part.find(exp.Or):
        return False
    if isinstance(part, exp.EQ):
        return all(len(scope.compile(side, where).inputs) == 1
                   for side in (part.this, part.expression))
    return True


def split_parts(parts: list[exp.Expression], scope: Scope, where: Position) -> SplitCondition:
    """Classify conjuncts of a join condition by the inputs they reference
    (those of ON, and those of WHERE that are part of the condition)."""
    out = SplitCondition()
    for part in parts:
        compiled = scope.compile(part, where)
        pos = scope.position(part, where)
        if isinstance(part, exp.EQ):
            lhs = scope.compile(part.this, where)
            rhs = scope.compile(part.expression, where)
            for side_expr, side in ((part.this, lhs), (part.expression, rhs)):
                if len(side.inputs) > 1:
                    raise SqlError(
                        scope.position(side_expr, pos),
                        f"each side of '=' in ON must reference one input, but "
                        f"'{side_expr.sql()}' references both {_names(scope, side.inputs)}",
                        "compare an expression of one input with an expression of the other "
                        "(for example customers.id = orders.customer_id), or move the "
                        "condition to WHERE",
                    )
            if len(lhs.inputs) == 1 and len(rhs.inputs) == 1 and lhs.inputs != rhs.inputs:
                lnode, rnode = part.this, part.expression
                if lhs.inputs == {"r"}:
                    lhs, rhs, lnode, rnode = rhs, lhs, rnode, lnode
                out.equalities.append(EqualityPart(lhs, rhs, part, part.sql(), lnode, rnode))
                continue
        if len(compiled.inputs) > 1:
            if isinstance(part, exp.Or) or part.find(exp.Or):
                raise SqlError(
                    pos,
                    f"an OR in ON may not span inputs: '{part.sql()}' references both "
                    f"{_names(scope, compiled.inputs)}",
                    "join on equalities joined by AND; put a condition that needs OR "
                    "across inputs in WHERE",
                )
            out.cross.append((part, compiled))
        elif compiled.inputs == {"l"}:
            out.left_only.append(compiled)
        elif compiled.inputs == {"r"}:
            out.right_only.append(compiled)
        else:
            out.constant.append(compiled)
    return out
