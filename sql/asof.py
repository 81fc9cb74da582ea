"""ASOF joins (RisingWave): the rules of the ON condition.

``A ASOF [LEFT] JOIN B ON <equalities> AND <one inequality>`` pairs each left
row with the right row nearest to it that satisfies the inequality, among the
right rows that satisfy the equalities (LANGUAGE.md, "ASOF joins"). As in
RisingWave, ON needs at least one equality and exactly one inequality between
the two inputs; a condition over one input only filters that input as in any
join. The result is a table keyed by the left row's key, so the inputs are
never re-keyed and a key projection is rejected.
"""

from __future__ import annotations

from dataclasses import replace

from splice.sql.conditions import SplitCondition
from splice.sql.errors import Position, SqlError
from splice.sql.plan import AsofInequality, JoinType
from splice.sql.scope import Input, Scope
from splice.sql.types import same_type_family
from sqlglot import exp

_OPS: dict[type[exp.Expression], str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_MIRROR = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
EXAMPLE = "ON a.id = b.id AND b.ts <= a.ts"


def check_asof_join(join: exp.Join, join_type: JoinType, left: Input, right: Input,
                    scope: Scope, pos: Position) -> None:
    """The join types and clauses an ASOF join may have."""
    if join_type not in (JoinType.INNER, JoinType.LEFT):
        raise SqlError(pos, f"an ASOF join is INNER or LEFT, not {join_type.value}",
                       "write ASOF JOIN or ASOF LEFT JOIN")
    for clause, name in ((join.args.get("within"), "WITHIN"),
                         (join.args.get("grace"), "GRACE PERIOD")):
        if isinstance(clause, exp.Expression):
            raise SqlError(scope.position(clause, pos), f"{name} has no meaning in an ASOF "
                           "join: its inequality, not a window, picks the match",
                           f"remove {name}")
    for inp in (left, right):
        window = inp.node.args.get("stream_window") if isinstance(inp.node, exp.Table) else None
        if isinstance(window, exp.Expression):
            raise SqlError(scope.position(window, inp.position), "an OVER window has no "
                           "meaning in an ASOF join", "drop the OVER (...) clause")


def asof_inequality(condition: SplitCondition, scope: Scope, pos: Position
                    ) -> tuple[AsofInequality, SplitCondition]:
    """The ON condition's one inequality between the inputs, normalized to
    ``l op r``, and the condition without it."""
    if not condition.equalities:
        raise SqlError(pos, "an ASOF join needs at least one equality between the inputs "
                       "besides its inequality (RisingWave's rule)",
                       f"add an equality to ON, for example {EXAMPLE}")
    comparisons = [(part, c) for part, c in condition.cross if type(part) in _OPS]
    for part, _ in condition.cross:
        if type(part) not in _OPS:
            raise SqlError(scope.position(part, pos), f"'{part.sql()}' compares the two "
                           "inputs, but an ASOF join's ON holds only equalities and one "
                           "inequality (<, <=, >, >=)",
                           "filter the joined rows with WHERE instead")
    if len(comparisons) != 1:
        found = "none" if not comparisons else ", ".join(p.sql() for p, _ in comparisons)
        raise SqlError(pos, f"an ASOF join needs exactly one inequality between the inputs "
                       f"in ON (found {found}): it picks the nearest match",
                       f"keep one, for example {EXAMPLE}; filter by the others in WHERE")
    part, _ = comparisons[0]
    op = _OPS[type(part)]
    lhs, rhs = scope.compile(part.this, pos), scope.compile(part.expression, pos)
    for side_node, side in ((part.this, lhs), (part.expression, rhs)):
        if len(side.inputs) != 1:
            raise SqlError(scope.position(side_node, pos), f"each side of the ASOF "
                           f"inequality must reference one input, but '{side_node.sql()}' "
                           "does not", f"compare a column of each input, for example {EXAMPLE}")
    if lhs.inputs == {"r"}:
        lhs, rhs, op = rhs, lhs, _MIRROR[op]
    if not same_type_family(lhs.type, rhs.type):
        raise SqlError(scope.position(part, pos), f"the ASOF inequality compares "
                       f"{lhs.type.upper()} with {rhs.type.upper()}",
                       "CAST one side to the other's type")
    inequality = AsofInequality(left=lhs.sql, op=op, right=rhs.sql, text=part.sql())
    return inequality, replace(condition, cross=[])
