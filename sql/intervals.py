"""Interval joins written as time bounds in the join's condition (RisingWave,
Flink): in ON, or in WHERE where WHERE is part of the condition
(:mod:`splice.sql.where_parts`).

``s1.ts BETWEEN s2.ts - INTERVAL '1' MINUTE AND s2.ts + INTERVAL '1' MINUTE``,
the same split over two comparisons, and ``l.ts = r.ts`` bound the
difference of the two inputs' event times. Each such conjunct is read as a
bound on ``d = r.ROWTIME - l.ROWTIME``; together they make the window
``lower <= d <= upper``.

Only a comparison of the two inputs' *event times* (the source's declared
timestamp column, or ``ROWTIME``), each plus or minus constant intervals, is
a bound. Anything else that compares the inputs is an ordinary residual
predicate, and leaves the join without a window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from splice.sql import expressions
from splice.sql.conditions import EqualityPart, SplitCondition
from splice.sql.errors import Position, SqlError
from splice.sql.parsing.lexical import split_compact_duration
from splice.sql.scope import Input, Resolved, Scope
from sqlglot import exp


def parse_duration_ms(text: str) -> int | None:
    """Milliseconds in a setting or interval value such as '1 HOUR', '5s',
    '30 SECONDS': a whole amount and a unit."""
    parts = text.split()
    if len(parts) == 1:
        compact = split_compact_duration(parts[0])
        if compact is None:
            return None
        amount, unit = compact
    elif len(parts) == 2:
        amount, unit = parts
    else:
        return None
    unit_ms = expressions.UNIT_MILLIS.get(unit.upper())
    if not amount.isdecimal() or unit_ms is None:
        return None
    return int(amount) * unit_ms


def interval_ms(node: exp.Expression) -> int | None:
    """The length of ``INTERVAL '1' MINUTE``, ``INTERVAL '1 minute'`` or a
    :class:`expressions.Duration`; ``None`` for anything else."""
    if isinstance(node, expressions.Duration):
        return node.millis
    if isinstance(node, exp.Interval):
        value = node.this.name if isinstance(node.this, exp.Expression) else ""
        unit = node.args.get("unit")
        text = f"{value} {unit.name}" if isinstance(unit, exp.Expression) else value
        return parse_duration_ms(text)
    return None


@dataclass(frozen=True)
class _Term:
    """One input's event time plus a constant: ``side`` is ``l`` or ``r``."""

    side: str
    offset_ms: int


@dataclass
class _Bound:
    """What one conjunct says about ``d = r.ROWTIME - l.ROWTIME``."""

    node: exp.Expression
    lower: int | None = None  # d >= lower
    upper: int | None = None  # d <= upper
    strict: bool = False  # written with < or >: also kept as a residual predicate
    form: str = "INTERVAL"


@dataclass
class TimeBounds:
    """The window the time bounds make: ``-before_ms <= d <= after_ms``."""

    before_ms: int
    after_ms: int
    form: str
    condition: SplitCondition = field(default_factory=SplitCondition)


class TimeBoundReader:
    """Finds the time-bound conjuncts of a join's condition."""

    def __init__(self, scope: Scope, left: Input, right: Input, where: Position) -> None:
        self.scope = scope
        self.left = left
        self.right = right
        self.where = where

    def read(self, condition: SplitCondition) -> TimeBounds | None:
        """The window made by the time bounds in ``condition``, and the
        condition without them; ``None`` when it has none. A one-sided or an
        empty range is rejected."""
        bounds: list[_Bound] = []
        cross = []
        for part, compiled in condition.cross:
            bound = self._conjunct(part)
            if bound is None or bound.strict:
                cross.append((part, compiled))
            if bound is not None:
                bounds.append(bound)
        equalities: list[EqualityPart] = []
        for eq in condition.equalities:
            bound = self._compare(eq.left_node, eq.right_node, "=", eq.node)
            if bound is None:
                equalities.append(eq)
            else:
                bound.form = "EQUAL TIME"
                bounds.append(bound)
        if not bounds:
            return None
        lowers = [b.lower for b in bounds if b.lower is not None]
        uppers = [b.upper for b in bounds if b.upper is not None]
        if not lowers or not uppers:
            raise self._one_sided(bounds[0], missing_upper=not uppers)
        lower, upper = max(lowers), min(uppers)
        if lower > upper:
            raise SqlError(
                self.scope.position(bounds[0].node, self.where),
                f"the time bounds in ON leave no pair that can match: "
                f"{self._time(self.right)} - {self._time(self.left)} would have to be at least "
                f"{lower} ms and at most {upper} ms",
                "correct the intervals so that the lower bound is below the upper one",
            )
        if lower > 0 or upper < 0:
            # The window must hold d = 0 (both never negative): widen it to
            # do so, and keep the bounds as residual predicates for exactness.
            cross = [*cross, *((b.node, self.scope.compile(b.node, self.where)) for b in bounds
                               if not b.strict and b.node not in [p for p, _ in cross])]
            lower, upper = min(lower, 0), max(upper, 0)
        forms = {b.form for b in bounds}
        form = "BETWEEN" if "BETWEEN" in forms else ("EQUAL TIME" if forms == {"EQUAL TIME"}
                                                    else "INTERVAL")
        rest = SplitCondition(equalities=equalities, left_only=condition.left_only,
                              right_only=condition.right_only, constant=condition.constant,
                              cross=cross)
        return TimeBounds(before_ms=-lower, after_ms=upper, form=form, condition=rest)

    # -- one conjunct -------------------------------------------------------
    def _conjunct(self, part: exp.Expression) -> _Bound | None:
        part = part.unnest()
        if isinstance(part, exp.Between):
            if part.args.get("symmetric"):
                return None
            low = self._compare(part.args.get("low"), part.this, "<=", part)
            high = self._compare(part.this, part.args.get("high"), "<=", part)
            if low is None or high is None:
                return None
            return _Bound(node=part, lower=_first(low.lower, high.lower),
                          upper=_first(low.upper, high.upper), form="BETWEEN")
        ops = {exp.LTE: "<=", exp.LT: "<", exp.GTE: ">=", exp.GT: ">", exp.EQ: "="}
        op = ops.get(type(part))
        if op is None:
            return None
        return self._compare(part.this, part.expression, op, part)

    def _compare(self, a: exp.Expression | None, b: exp.Expression | None, op: str,
                 node: exp.Expression) -> _Bound | None:
        """The bound ``a op b`` puts on ``d``, when ``a`` and ``b`` are the two
        inputs' event times (plus constants)."""
        ta, tb = self._term(a), self._term(b)
        if ta is None or tb is None or ta.side == tb.side:
            return None
        bound = _Bound(node=node, strict=op in ("<", ">"))
        if op in ("<=", "<", "="):
            _at_most(bound, ta, tb)
        if op in (">=", ">", "="):
            _at_most(bound, tb, ta)
        return bound

    def is_bound(self, part: exp.Expression) -> bool:
        """Whether a conjunct bounds the two inputs' event times (a bound
        of either side, or an equality of the two times)."""
        return self._conjunct(part) is not None

    def near_miss(self, parts: list[exp.Expression]) -> str | None:
        """When a join has no window: the first comparison of the two inputs
        among ``parts`` that would be a time bound if its columns were the
        inputs' event times, said in words, so the error can point at it."""
        for part in parts:
            for column in self._columns_compared(part.unnest()):
                resolved = self._resolve(column)
                if resolved is not None and not _is_event_time(resolved):
                    inp = resolved.input
                    return (f"'{part.sql()}' is not a window: {column.sql()} is not the event "
                            f"time of '{inp.alias}' ({self._time(inp)})")
        return None

    def _columns_compared(self, part: exp.Expression) -> list[exp.Column]:
        """The column of each side of a comparison of two inputs' times."""
        if isinstance(part, exp.Between):
            sides = [part.this, part.args.get("low"), part.args.get("high")]
        elif isinstance(part, (exp.LTE, exp.LT, exp.GTE, exp.GT, exp.EQ)):
            sides = [part.this, part.expression]
        else:
            return []
        columns = [self._term_column(s) for s in sides]
        found = [c for c in columns if c is not None]
        return found if len(found) == len(sides) else []

    def _term_column(self, node: exp.Expression | None) -> exp.Column | None:
        """The column of ``column [+|- interval ...]``."""
        while node is not None:
            node = node.unnest()
            if isinstance(node, exp.Column):
                return node if not isinstance(node.this, exp.Star) else None
            if isinstance(node, exp.Add) and interval_ms(node.expression) is not None:
                node = node.this
            elif isinstance(node, exp.Add) and interval_ms(node.this) is not None:
                node = node.expression
            elif isinstance(node, exp.Sub) and interval_ms(node.expression) is not None:
                node = node.this
            else:
                return None
        return None

    def _resolve(self, column: exp.Column) -> Resolved | None:
        try:
            return self.scope.resolve(column, self.where)
        except SqlError:
            return None

    def _term(self, node: exp.Expression | None) -> _Term | None:
        """``node`` as one input's event time plus a constant interval.
        A loop down ``time + interval - interval ...`` (however long)."""
        offset = 0
        while node is not None:
            node = node.unnest()
            if isinstance(node, exp.Column):
                if isinstance(node.this, exp.Star):
                    return None
                resolved = self._resolve(node)
                if resolved is None or not _is_event_time(resolved):
                    return None
                return _Term(resolved.input.side, offset)
            if isinstance(node, exp.Add) and (ms := interval_ms(node.expression)) is not None:
                node, offset = node.this, offset + ms
            elif isinstance(node, exp.Add) and (ms := interval_ms(node.this)) is not None:
                node, offset = node.expression, offset + ms
            elif isinstance(node, exp.Sub) and (ms := interval_ms(node.expression)) is not None:
                node, offset = node.this, offset - ms
            else:
                return None
        return None

    # -- errors -------------------------------------------------------------
    def _time(self, inp: Input) -> str:
        column = inp.relation.time_column
        view = inp.views[0]
        if column is not None:
            alias_column = next((k for k, v in view.columns.items()
                                 if v.lower() == column.lower()), column)
            return f"{view.name}.{alias_column}"
        return f"{view.name}.ROWTIME"

    def _one_sided(self, bound: _Bound, missing_upper: bool) -> SqlError:
        lt, rt = self._time(self.left), self._time(self.right)
        later, earlier = (rt, lt) if missing_upper else (lt, rt)
        waiting = self.left.alias if missing_upper else self.right.alias
        return SqlError(
            self.scope.position(bound.node, self.where),
            f"'{bound.node.sql()}' bounds the two event times from one side only: it "
            f"limits how much earlier {later} may be than {earlier}, but the bound of how "
            f"much later {later} may be than {earlier} is missing, so every '{waiting}' "
            "record would wait forever for a match",
            f"add the missing bound, for example AND {later} <= {earlier} + INTERVAL '1' "
            "MINUTE, or give the join a window with WITHIN",
        )


def _is_event_time(resolved: Resolved) -> bool:
    if resolved.facet == "rowtime":
        return True
    time_column = resolved.input.relation.time_column
    return (resolved.facet == "value" and not resolved.fields and time_column is not None
            and resolved.column is not None and resolved.column.lower() == time_column.lower())


def _at_most(bound: _Bound, a: _Term, b: _Term) -> None:
    """Record ``a <= b`` (``x.time + a.offset <= y.time + b.offset``) on ``d``."""
    if a.side == "l":  # l + a <= r + b  =>  d >= a - b
        value = a.offset_ms - b.offset_ms
        bound.lower = value if bound.lower is None else max(bound.lower, value)
    else:  # r + a <= l + b  =>  d <= b - a
        value = b.offset_ms - a.offset_ms
        bound.upper = value if bound.upper is None else min(bound.upper, value)


def _first(a: int | None, b: int | None) -> int | None:
    return a if a is not None else b
