"""Windows written in FROM: s-Server's ``stream OVER (RANGE ... PRECEDING)``
and RisingWave's ``TUMBLE(s, ts, size)`` / ``HOP(s, ts, slide, size)``."""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.parsing.durations import DurationParser
from splice.sql.parsing.lexical import QUOTED_TOKENS, LexicalParser
from sqlglot import exp
from sqlglot.tokens import TokenType

# Window functions RisingWave allows in FROM, with their number of arguments.
WINDOW_FUNCTIONS: dict[str, int] = {"TUMBLE": 3, "HOP": 4}


class WindowParser(DurationParser, LexicalParser):
    """OVER windows on a stream and window-function tables."""

    def _at_window_function(self) -> bool:
        return (
            self._curr.token_type not in QUOTED_TOKENS
            and self._curr.text.upper() in WINDOW_FUNCTIONS
            and self._next.token_type == TokenType.L_PAREN
        )

    def _parse_window_table(self) -> expressions.WindowTable:
        """RisingWave's ``TUMBLE(s, ts, size)`` and ``HOP(s, ts, slide, size)``."""
        opening = self._curr
        kind = opening.text.upper()
        call = f"{kind}(source, time column, {'slide, size' if kind == 'HOP' else 'size'})"
        self._advance(2)

        source = self._parse_table_parts()
        if not isinstance(source, exp.Table):
            self._fail(f"syntax error: expected a stream name as the first argument of {kind}",
                       f"write {call}")
        self._expect_comma(call)
        column = self._parse_column()
        if not isinstance(column, exp.Column):
            self._fail(f"syntax error: expected the time column as the second argument of "
                       f"{kind}", f"write {call}")

        durations = []
        for _ in range(WINDOW_FUNCTIONS[kind] - 2):
            self._expect_comma(call)
            durations.append(self._parse_required_duration(kind))
        if not self._match(TokenType.R_PAREN):
            self._fail(f"syntax error: expected ')' to close {kind}(...)", f"write {call}")

        size = durations[-1]
        slide = durations[0] if kind == "HOP" else None
        return self.expression(
            expressions.WindowTable(this=source, kind=kind, column=column, size=size, slide=slide,
                              alias=self._parse_table_alias()),
            opening,
        )

    def _expect_comma(self, call: str) -> None:
        if not self._match(TokenType.COMMA):
            self._fail(f"syntax error: expected ',' between the arguments of {call}",
                       f"write {call}")

    def _parse_stream_window(self) -> expressions.StreamWindow | None:
        """s-Server's ``OVER (RANGE ... PRECEDING | ROWS n PRECEDING | ...)``."""
        over = self._curr
        if over.token_type != TokenType.OVER or self._next.token_type != (
            TokenType.L_PAREN
        ):
            return None
        self._advance(2)
        if self._match(TokenType.RANGE):
            kind = "RANGE"
            width = self._parse_window_extent(kind, lambda: self._parse_required_duration(
                "RANGE"))
        elif self._match(TokenType.ROWS):
            kind = "ROWS"
            width = self._parse_window_extent(kind, self._parse_row_count)
            width = width if width is not None else exp.Literal.number(0)
        else:
            self._fail("syntax error: expected RANGE or ROWS after OVER (",
                       "write OVER (RANGE INTERVAL '1' MINUTE PRECEDING) or "
                       "OVER (ROWS 10 PRECEDING)")
        if not self._match(TokenType.R_PAREN):
            self._fail("syntax error: expected ')' to close OVER (...)",
                       f"write OVER ({kind} ... PRECEDING)")
        return self.expression(expressions.StreamWindow(this=width, kind=kind), over)

    def _parse_window_extent(
        self, kind: str, parse_width: t.Callable[[], exp.Expr]
    ) -> exp.Expr | None:
        """The width of an OVER window: ``x PRECEDING``, ``CURRENT ROW``
        (``None``), or ``BETWEEN x PRECEDING AND CURRENT ROW``."""
        between = self._match(TokenType.BETWEEN)
        width: exp.Expr | None = None
        if self._match_text_seq("UNBOUNDED"):
            self._fail(f"an OVER ({kind} UNBOUNDED ...) window never closes and cannot be "
                       "joined", f"give the window a width: {kind} ... PRECEDING",
                       self._prev)
        if not self._match_text_seq("CURRENT", "ROW"):
            width = parse_width()
            if not self._match_text_seq("PRECEDING"):
                self._fail(f"syntax error: expected PRECEDING after the width of OVER ({kind} "
                           "...)", f"write OVER ({kind} ... PRECEDING)")
        if between and not (self._match(TokenType.AND) and self._match_text_seq("CURRENT",
                                                                                "ROW")):
            self._fail(f"syntax error: expected AND CURRENT ROW in OVER ({kind} BETWEEN ...)",
                       f"write OVER ({kind} BETWEEN ... PRECEDING AND CURRENT ROW)")
        return width

    def _parse_row_count(self) -> exp.Expr:
        token = self._curr
        if token.token_type != TokenType.NUMBER or not token.text.isdigit():
            self._fail("syntax error: expected a whole number of rows after ROWS",
                       "write OVER (ROWS 10 PRECEDING)")
        self._advance()
        return self.expression(exp.Literal.number(token.text), token)
