"""Stream-stream join windows: every form the four dialects write, normalized
to the one window model, :class:`splice.sql.plan.Window`.

A left record ``l`` and a right record ``r`` match when
``-before_ms <= r.ROWTIME - l.ROWTIME <= after_ms``:

- ``WITHIN d`` is ``(d, d)``; ``WITHIN (before, after)`` as written (Lenses,
  ksqlDB).
- s-Server's ``OVER (RANGE INTERVAL 'w' ... PRECEDING)`` on each input: the
  right row matches left rows in ``[r - Wl, r]`` and the left row right rows
  in ``[l - Wr, l]``, so ``r - Wl <= l <= r + Wr``: ``before = Wr``,
  ``after = Wl``. ``RANGE CURRENT ROW``, and an input without OVER, is
  width 0. ``ROWS n PRECEDING`` is rejected (see :func:`_over_width`).
- Time bounds in ON (RisingWave, Flink): :mod:`splice.sql.intervals`; in
  WHERE too, where WHERE is part of the condition: :mod:`splice.sql.where_parts`.
- RisingWave's ``TUMBLE`` / ``HOP`` on both inputs with ``window_start``
  equality: ``(size, size)``; the equality stays an ordinary join equality.

The grace period is the statement's ``GRACE PERIOD``; else the larger of the
two inputs' source watermarks (``WATERMARK FOR ts AS ts - d``); else ``SET
join.grace.period``; else 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from splice.sql import expressions
from splice.sql.conditions import EqualityPart, SplitCondition
from splice.sql.errors import Position, SqlError
from splice.sql.intervals import TimeBoundReader
from splice.sql.limits import LIMIT_TEXT, MAX_DURATION_DAYS, too_long
from splice.sql.plan import Window
from splice.sql.scope import Input, Scope, WindowedBy
from sqlglot import exp

WINDOW_START = "window_start"
WINDOW_END = "window_end"


@dataclass
class JoinWindow:
    """A join's window (``None``: it has none) and its condition without the
    conjuncts the window was made of."""

    window: Window | None
    condition: SplitCondition
    # Without a window: why a comparison in ON that looks like one is not.
    hint: str | None = None


def stream_stream_window(join: exp.Join, left: Input, right: Input, condition: SplitCondition,
                         scope: Scope, where: Position, setting_grace_ms: int | None
                         ) -> JoinWindow:
    """The window of a join of two streams, in whichever form it is written.

    At most one form may be used. Time bounds in ON make the window only when
    no other form does; with another form they are residual predicates
    evaluated on every candidate pair, like any other.
    """
    forms: list[tuple[str, Window, Position]] = []
    within = join.args.get("within")
    if isinstance(within, expressions.Within):
        forms.append(("WITHIN", _within(within), scope.position(within, where)))
    over = _over(left, right, scope)
    if over is not None:
        forms.append(("OVER", over, _over_position(left, right, scope, where)))
    windowed = _window_function(left, right, condition, where)
    if windowed is not None:
        forms.append((windowed.form, windowed, where))
    if len(forms) > 1:
        (first, _, _), (second, _, at) = forms[0], forms[1]
        raise SqlError(at, f"this join has two windows, {first} and {second}; a join has one",
                       f"keep one of them: {first} or {second}")
    window: Window | None = forms[0][1] if forms else None
    hint = None
    if window is None:
        reader = TimeBoundReader(scope, left, right, where)
        bounds = reader.read(condition)
        hint = reader.near_miss([p for p, _ in condition.cross]) if bounds is None else None
        if bounds is not None:
            condition = bounds.condition
            window = Window(before_ms=bounds.before_ms, after_ms=bounds.after_ms,
                            form=bounds.form)
    grace = join.args.get("grace")
    if window is None:
        if grace is not None:
            raise SqlError(scope.position(grace, where), "GRACE PERIOD needs a window",
                           "add WITHIN before it, for example WITHIN 5 MINUTES GRACE PERIOD "
                           "1 MINUTE")
        return JoinWindow(None, condition, hint)
    grace_ms = _grace(grace, left, right, setting_grace_ms)
    if too_long(window.before_ms + window.after_ms + grace_ms):
        at = forms[0][2] if forms else where
        raise SqlError(at, f"this join's window and grace add up to "
                       f"{window.before_ms + window.after_ms + grace_ms} ms, longer than Spark "
                       f"can hold: {LIMIT_TEXT}", f"shorten the window or the grace period "
                       f"so that together they last at most {MAX_DURATION_DAYS} days")
    return JoinWindow(window.model_copy(update={"grace_ms": grace_ms}), condition)


def has_window_clause(join: exp.Join, left: Input, right: Input) -> bool:
    """Whether a join has a window other than time bounds in its condition:
    WITHIN, an OVER on an input, or inputs read through TUMBLE / HOP."""
    return (isinstance(join.args.get("within"), expressions.Within)
            or any(_stream_window(inp) is not None or inp.windowed is not None
                   for inp in (left, right)))


def reject_window_clauses(join: exp.Join, left: Input, right: Input, scope: Scope,
                          where: Position) -> None:
    """A join that is not of two streams has no window: WITHIN, GRACE PERIOD
    and OVER are rejected on it."""
    kinds = f"a {left.relation.kind} and a {right.relation.kind}"
    for clause, name in ((join.args.get("within"), "WITHIN"),
                         (join.args.get("grace"), "GRACE PERIOD")):
        if isinstance(clause, exp.Expression):
            raise SqlError(scope.position(clause, where),
                           f"{name} only applies to a join of two streams, and this joins "
                           f"{kinds}", f"remove {name}")
    for inp in (left, right):
        window = _stream_window(inp)
        if window is not None:
            raise SqlError(scope.position(window, inp.position),
                           "an OVER window only means something in a stream-stream join, "
                           f"and this joins {kinds}", "drop the OVER (...) clause")


def _within(within: expressions.Within) -> Window:
    before = within.this.millis
    after = within.expression.millis if within.expression is not None else before
    return Window(before_ms=before, after_ms=after, form="WITHIN")


def _stream_window(inp: Input) -> expressions.StreamWindow | None:
    window = inp.node.args.get("stream_window") if isinstance(inp.node, exp.Table) else None
    return window if isinstance(window, expressions.StreamWindow) else None


def _over(left: Input, right: Input, scope: Scope) -> Window | None:
    widths = [_over_width(inp, scope) for inp in (left, right)]
    if widths == [None, None]:
        return None
    wl, wr = (w or 0 for w in widths)
    return Window(before_ms=wr, after_ms=wl, form="OVER")


def _over_position(left: Input, right: Input, scope: Scope, where: Position) -> Position:
    for inp in (left, right):
        window = _stream_window(inp)
        if window is not None:
            return scope.position(window, inp.position)
    return where


def _over_width(inp: Input, scope: Scope) -> int | None:
    """The width of an input's ``OVER (RANGE ...)``; ``None`` without OVER.

    ``ROWS n PRECEDING`` is rejected: Spark's stream-stream join bounds the
    state it keeps by event time (watermarks), not by a number of rows; a
    count-based window would need per-key arbitrary state and would make a
    match depend on arrival order rather than on event time.
    """
    window = _stream_window(inp)
    if window is None:
        return None
    if str(window.args.get("kind")).upper() == "ROWS":
        raise SqlError(scope.position(window, inp.position),
                       "OVER (ROWS n PRECEDING) is a count-based window, and a stream-stream "
                       "join keeps records by event time, not by number of rows: which rows "
                       "are 'the last n' depends on arrival order and cannot be bounded by a "
                       "watermark",
                       "use a time range instead, for example OVER (RANGE INTERVAL '1' MINUTE "
                       "PRECEDING)")
    width = window.this
    return width.millis if isinstance(width, expressions.Duration) else 0


def _describe(w: WindowedBy) -> str:
    if w.kind == "HOP":
        return f"HOP(..., slide {w.slide_ms} ms, size {w.size_ms} ms)"
    return f"TUMBLE(..., size {w.size_ms} ms)"


def _window_function(left: Input, right: Input, condition: SplitCondition,
                     where: Position) -> Window | None:
    """RisingWave's window join: both inputs read through the same TUMBLE or
    HOP, and ON equating their ``window_start`` (or ``window_end``)."""
    lw, rw = left.windowed, right.windowed
    if lw is None and rw is None:
        return None
    if lw is None or rw is None:
        present, inp = (lw, left) if lw is not None else (rw, right)
        assert present is not None
        other = right if inp is left else left
        raise SqlError(present.position,
                       f"a window join reads both inputs through the same window function, "
                       f"but only '{inp.alias}' is read through {present.kind}",
                       f"read '{other.alias}' through the same {_describe(present)} too, or "
                       "join the plain streams WITHIN a window")
    if (lw.kind, lw.size_ms, lw.slide_ms) != (rw.kind, rw.size_ms, rw.slide_ms):
        raise SqlError(rw.position,
                       f"the two inputs of a window join must use the same window, but they "
                       f"use {_describe(lw)} and {_describe(rw)}",
                       f"use {_describe(lw)} on both inputs")
    if not any(_same_window_column(eq) for eq in condition.equalities):
        raise SqlError(where,
                       "a window join matches records of the same window, but ON does not "
                       "equate the two inputs' windows",
                       f"add AND {left.alias}.{WINDOW_START} = {right.alias}.{WINDOW_START} "
                       "to ON")
    return Window(before_ms=lw.size_ms, after_ms=lw.size_ms, form=lw.kind,
                  size_ms=lw.size_ms, slide_ms=lw.slide_ms)


def _same_window_column(eq: EqualityPart) -> bool:
    names = []
    for compiled in (eq.left, eq.right):
        node = compiled.node
        if not isinstance(node, exp.Column):
            return False
        names.append(node.name.lower())
    return names[0] == names[1] and names[0] in (WINDOW_START, WINDOW_END)


def _grace(grace: exp.Expression | None, left: Input, right: Input,
           setting_grace_ms: int | None) -> int:
    if isinstance(grace, expressions.Duration):
        return grace.millis
    marks = [w for w in (left.relation.watermark_ms, right.relation.watermark_ms)
             if w is not None]
    if marks:
        return max(marks)
    return setting_grace_ms or 0
