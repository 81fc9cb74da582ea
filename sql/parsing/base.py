"""The base of every part of the Splice parser: Splice-worded errors.

The parser is Spark's, extended by one mixin per concern (see
:mod:`splice.sql.parsing`); each mixin derives from :class:`ParserBase`, so every part
raises its errors the same way: the rule broken and how to fix it, with the
offending token's character offset recorded for :mod:`splice.sql.script`.
"""

from __future__ import annotations

import typing as t

from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.parser import SENTINEL_NONE
from sqlglot.tokens import Token


class ParserBase(Spark.Parser):
    """Spark's parser with Splice's error reporting."""

    def current_offset(self) -> int | None:
        """The character offset of the token being read, if any: where an
        unexpected failure inside the parser is reported."""
        return self._curr.start if self._curr else None

    def raise_error(self, message: str, token: Token = SENTINEL_NONE) -> None:
        """sqlglot's raise_error, recording the offending token's character
        offset (``offset``) and whether the statement ended early
        (``at_end``) so that positions need no line/column arithmetic."""
        at_end = not token and not self._curr
        anchor = token or self._curr or self._prev
        offset = 0
        if anchor:
            offset = anchor.end + 1 if at_end else anchor.start
        found = len(self.errors)
        try:
            super().raise_error(message, token)
        except ParseError as error:
            _annotate(error, offset, at_end, anchor)
            raise
        for error in self.errors[found:]:
            _annotate(error, offset, at_end, anchor)

    def _fail(self, rule: str, fix: str, token: Token | None = None) -> t.NoReturn:
        """Stop with a Splice-worded error: the rule broken and how to fix it."""
        found = len(self.errors)
        try:
            self.raise_error(rule, token or SENTINEL_NONE)
        except ParseError as error:
            for info in error.errors:
                info["fix"] = fix
            raise
        # Lower error levels collect instead of raising; a Splice construct
        # cannot be half-parsed, so stop anyway.
        error = self.errors[found] if len(self.errors) > found else ParseError(rule)
        for info in error.errors:
            info["fix"] = fix
        raise error

    def _warn_unsupported(self) -> None:
        """Silenced: a statement sqlglot keeps as an opaque Command is not a
        pipeline statement, and the script rejects it with a positioned error."""


def _annotate(error: ParseError, offset: int, at_end: bool, token: Token | None) -> None:
    for info in error.errors:
        info.setdefault("offset", offset)
        info.setdefault("at_end", at_end)
        info.setdefault("token", token.text if token else "")
