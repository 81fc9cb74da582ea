"""Which conjuncts of WHERE are part of a join's condition.

SQL's ``FROM l, r WHERE c`` means ``FROM l JOIN r ON c``, and on an inner
join a conjunct means the same in WHERE as in ON. So a join's condition,
its window included, may be written in ON, in WHERE, or split over both
(docs/decisions/window-condition-anywhere.md):

- **A comma join** (``FROM l, r``): every conjunct of WHERE that relates the
  two inputs as ON accepts (:func:`splice.sql.conditions.joins_inputs`) is
  part of its condition, read exactly as in ON: its equalities make it an
  inner join (with none it stays a cross join), its time bounds its window,
  the rest its residual. A conjunct over one input stays in WHERE and runs
  before the join, as ON's would on an inner join; what ON refuses (an OR
  across the inputs) filters the joined rows.
- **An inner or cross join of two streams** with no other window (WITHIN,
  OVER, TUMBLE / HOP): the time bounds in WHERE join those in ON. Its other
  conjuncts stay in WHERE, as before.
- **An outer join's** WHERE filters its rows after the missing side is
  padded with nulls, so nothing in it is a window (the error says so).

In a chain, a stage before the last takes only the conjuncts whose every
column is qualified by one of its inputs' aliases; the last stage takes from
what is left.
"""

from __future__ import annotations

from splice.sql.conditions import joins_inputs
from splice.sql.errors import Position, SqlError
from splice.sql.intervals import TimeBoundReader
from splice.sql.plan import JoinType, Kind
from splice.sql.scope import Input, Scope, column_parts
from splice.sql.windows import has_window_clause
from sqlglot import exp


def is_comma(join: exp.Join) -> bool:
    """Whether the join is written ``FROM l, r`` (sql/parsing/joins.py)."""
    return bool(join.args.get("comma"))


def stage_candidates(pending: list[exp.Expression], scope: Scope,
                     last: bool) -> list[exp.Expression]:
    """The conjuncts of WHERE that one stage of a chain may take."""
    if last:
        return list(pending)
    aliases = {name.lower() for name in scope.alias_names()}

    def fits(part: exp.Expression) -> bool:
        columns = [c for c in part.find_all(exp.Column) if not isinstance(c.this, exp.Star)]
        return bool(columns) and all(
            len(column_parts(c)) >= 2 and column_parts(c)[0].lower() in aliases
            for c in columns)

    return [p for p in pending if fits(p)]


def where_join_parts(candidates: list[exp.Expression], join: exp.Join, join_type: JoinType,
                     scope: Scope, left: Input, right: Input,
                     where: Position) -> list[exp.Expression]:
    """The conjuncts among ``candidates`` that are part of the join's
    condition (module docstring)."""
    if is_comma(join):
        return [p for p in candidates if joins_inputs(p, scope, where)]
    if not _bounds_in_where(join, join_type, left, right):
        return []
    reader = TimeBoundReader(scope, left, right, where)
    return [p for p in candidates if reader.is_bound(p)]


def where_window_hint(candidates: list[exp.Expression], join: exp.Join, join_type: JoinType,
                      scope: Scope, left: Input, right: Input, where: Position) -> str | None:
    """For a join of two streams left without a window: why a comparison in
    WHERE that looks like a window is not one."""
    reader = TimeBoundReader(scope, left, right, where)
    if join_type in (JoinType.LEFT, JoinType.RIGHT, JoinType.FULL):
        bound = next((p for p in candidates if reader.is_bound(p)), None)
        if bound is not None:
            return (f"'{bound.sql()}' is in WHERE, which filters the rows of a "
                    f"{join_type.value} join after it pads them with nulls: it is not the "
                    "join's window; write it in ON")
        return None
    if is_comma(join) or not _bounds_in_where(join, join_type, left, right):
        return None  # a comma join's comparisons are in its condition already
    return reader.near_miss([p for p in candidates if _relates(p, scope, where)])


def _bounds_in_where(join: exp.Join, join_type: JoinType, left: Input, right: Input) -> bool:
    """Whether the time bounds in WHERE may make the join's window."""
    return (left.relation.kind == right.relation.kind == Kind.STREAM
            and join_type in (JoinType.INNER, JoinType.CROSS)
            and str(join.args.get("method") or "").upper() != "ASOF"
            and not has_window_clause(join, left, right))


def _relates(part: exp.Expression, scope: Scope, where: Position) -> bool:
    try:
        return len(scope.compile(part, where).inputs) > 1
    except SqlError:  # reported where WHERE is placed
        return False
