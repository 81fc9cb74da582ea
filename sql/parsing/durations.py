"""Durations: ``5s``, ``500ms``, ``5 SECONDS``, ``INTERVAL '1' MINUTE``.

Every duration becomes a :class:`splice.sql.expressions.Duration` holding its amount, its
canonical unit and its length in milliseconds; a duration that is negative,
has no unit, is not a whole number of milliseconds or is longer than Spark
can hold (:mod:`splice.sql.limits`) is rejected here.
"""

from __future__ import annotations

import typing as t
from decimal import Decimal, InvalidOperation

from splice.sql import expressions
from splice.sql.limits import FIX_TEXT, too_long, too_long_rule
from splice.sql.parsing.base import ParserBase
from splice.sql.parsing.lexical import is_unit, split_compact_duration
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.parser import SENTINEL_NONE
from sqlglot.tokens import Token, TokenType

# The canonical unit name for each length of unit in expressions.UNIT_MILLIS.
CANONICAL_UNITS: dict[int, str] = {
    1: "MILLISECOND",
    1_000: "SECOND",
    60_000: "MINUTE",
    3_600_000: "HOUR",
    86_400_000: "DAY",
}

DURATION_EXAMPLES = "5s, 500ms, 5 SECONDS, 1 HOUR or INTERVAL '5' SECOND"


class DurationParser(ParserBase):
    """The durations of windows, grace periods and settings."""

    EXPRESSION_PARSERS: t.ClassVar = {
        **Spark.Parser.EXPRESSION_PARSERS,
        expressions.Duration: lambda self: self._parse_required_duration("the setting"),
    }

    def _parse_required_duration(self, context: str) -> expressions.Duration:
        token = self._curr
        duration = self._parse_duration()
        if duration is not None:
            return duration
        if token.token_type == TokenType.NUMBER:
            unit = self._next
            if unit and unit.token_type == TokenType.VAR:
                self._fail(f"unsupported time unit {unit.text} in a duration",
                           "use MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS", unit)
            self._fail(f"syntax error: the duration {token.text} after {context} has no unit",
                       f"add a unit: {token.text} SECONDS, {token.text}s, "
                       f"{token.text} MINUTES ...", token)
        self._fail(f"syntax error: expected a duration after {context}",
                   f"write a duration such as {DURATION_EXAMPLES}", token or SENTINEL_NONE)

    def _parse_duration(self) -> expressions.Duration | None:
        """``5s``, ``500ms``, ``5 SECONDS``, ``1 HOUR``, ``INTERVAL '1' MINUTE``,
        ``INTERVAL '1 minute'``; ``None`` when no duration starts here."""
        token = self._curr
        if token.token_type == TokenType.INTERVAL:
            interval = self._parse_interval()
            return self._duration_from_interval(interval, token)
        if token.token_type == TokenType.VAR:
            compact = split_compact_duration(token.text)
            if compact is None:
                return None
            self._advance()
            return self._make_duration(*compact, token)
        if token.token_type == TokenType.NUMBER and is_unit(self._next):
            self._advance(2)
            return self._make_duration(token.text, self._prev.text, token)
        return None

    def _duration_from_interval(
        self, interval: exp.Expr | None, token: Token
    ) -> expressions.Duration:
        amount = interval.this if isinstance(interval, exp.Interval) else None
        unit = interval.args.get("unit") if isinstance(interval, exp.Interval) else None
        if not isinstance(amount, exp.Literal) or not isinstance(unit, exp.Var):
            self._fail("syntax error: expected one amount and one unit in this INTERVAL",
                       "write INTERVAL '5' SECOND or INTERVAL '1 minute'", token)
        return self._make_duration(amount.name, unit.name, token)

    def _make_duration(self, amount: str, unit: str, token: Token) -> expressions.Duration:
        unit_millis = expressions.UNIT_MILLIS.get(unit.upper())
        if unit_millis is None:
            self._fail(f"unsupported time unit {unit} in a duration",
                       "use MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS", token)
        try:
            value = Decimal(amount)
        except InvalidOperation:
            self._fail(f"syntax error: {amount!r} is not a number of {unit}",
                       f"write a duration such as {DURATION_EXAMPLES}", token)
        if not value.is_finite() or value < 0:
            self._fail(f"a duration cannot be negative ({amount} {unit})",
                       "write a duration of zero or more", token)
        millis = value * unit_millis
        if millis != millis.to_integral_value():
            self._fail(f"the duration {amount} {unit} is not a whole number of milliseconds",
                       "use a smaller unit", token)
        if too_long(int(millis)):
            self._fail(too_long_rule(f"{amount} {unit}"), FIX_TEXT, token)
        return self.expression(
            expressions.Duration(this=exp.Literal.number(amount),
                           unit=CANONICAL_UNITS[unit_millis], millis=int(millis)),
            token,
        )
