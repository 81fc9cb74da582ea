"""Lexical pieces of the Splice dialect: which tokens are words, names, units.

Two lexical points need care:

- Durations such as ``5s``, ``1h`` and ``500ms`` are single VAR tokens (Spark
  lets identifiers start with a digit), so the unit suffixes that Spark reads
  as numeric literal types (``5S`` = SMALLINT, ``1D`` = DOUBLE) are dropped
  from the Splice tokenizer (:class:`splice.sql.dialect.Splice.Tokenizer`).
- Hyphenated names (``input-topic``) are recognised where a name stands (a
  table, an alias, a statement's target) by token adjacency: the ``-`` touches
  both neighbours. ``a - b`` and ``a-b`` inside an expression stay subtraction.

:class:`LexicalParser` holds the parsing of names and of plain option values;
the token predicates here are shared by every part of the parser.
"""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.parsing.base import ParserBase
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

# Words that follow a join's table and so must never be read as its alias.
_NOT_TABLE_ALIASES = frozenset({"WITHIN", "GRACE"})

# Token types whose text was quoted in the source: never a keyword or a bare word.
QUOTED_TOKENS = frozenset(
    {
        TokenType.STRING,
        TokenType.IDENTIFIER,
        TokenType.RAW_STRING,
        TokenType.NATIONAL_STRING,
        TokenType.NATIONAL_RAW_STRING,
        TokenType.BIT_STRING,
        TokenType.BYTE_STRING,
        TokenType.HEX_STRING,
        TokenType.HEREDOC_STRING,
        TokenType.UNICODE_STRING,
    }
)


def is_word_token(token: Token | None) -> bool:
    """Whether ``token`` is an unquoted word (letters, digits, ``_``): a keyword,
    a name or a number, anything that may be part of a hyphenated name."""
    if not token or token.token_type in QUOTED_TOKENS or not token.text:
        return False
    return all(ch.isalnum() or ch == "_" for ch in token.text)


def is_bare_name(text: str, separators: str = "-") -> bool:
    """Whether ``text`` reads back as one name when printed unquoted in a name
    position: words joined by single ``separators`` characters."""
    parts: list[str] = [text]
    for sep in separators:
        parts = [piece for part in parts for piece in part.split(sep)]
    return len(text) > 0 and all(
        part and all(ch.isalnum() or ch == "_" for ch in part) for part in parts
    )


def split_compact_duration(text: str) -> tuple[str, str] | None:
    """Split the text of one duration token such as ``5s`` or ``500ms`` into
    its amount and its unit; ``None`` when it is not one."""
    cut = 0
    while cut < len(text) and (text[cut].isdigit() or text[cut] == "."):
        cut += 1
    amount, unit = text[:cut], text[cut:]
    if not amount or not amount[0].isdigit() or unit.upper() not in expressions.UNIT_MILLIS:
        return None
    return amount, unit


def is_text(token: Token | None, text: str) -> bool:
    """Whether ``token`` is the unquoted word ``text`` (any case)."""
    return bool(token) and token.token_type not in QUOTED_TOKENS and token.text.upper() == text


def is_unit(token: Token | None) -> bool:
    """Whether ``token`` is an unquoted time unit (``SECONDS``, ``ms`` ...)."""
    return bool(token) and token.token_type not in QUOTED_TOKENS and (
        token.text.upper() in expressions.UNIT_MILLIS
    )


class LexicalParser(ParserBase):
    """Names (dotted, hyphenated) and the plain values of options and settings."""

    # s-Server's `stream OVER (...)` : OVER is never a table alias.
    TABLE_ALIAS_TOKENS: t.ClassVar[set] = Spark.Parser.TABLE_ALIAS_TOKENS - {TokenType.OVER}

    def _parse_plain_value(self) -> exp.Expr | None:
        """An option or setting value, always an ``exp.Literal``: a string, a
        number, or a bare word such as ``true`` or ``lenient`` (a string)."""
        token = self._curr
        if self._match(TokenType.STRING):
            return self.expression(exp.Literal.string(token.text), token)
        if token.token_type == TokenType.DASH and self._next.token_type == TokenType.NUMBER:
            self._advance(2)
            return self.expression(exp.Literal.number(f"-{self._prev.text}"), token)
        if self._match(TokenType.NUMBER):
            return self.expression(exp.Literal.number(token.text), token)
        if self._match_set((TokenType.TRUE, TokenType.FALSE)):
            return self.expression(exp.Literal.string(token.text.lower()), token)
        word = self._parse_dotted_word()
        if word is not None:
            return self.expression(exp.Literal.string(word.name), token)
        return None

    def _glue_hyphens(self, part: exp.Expr | None) -> exp.Expr | None:
        """Extend the name ``part`` just parsed with ``-word`` pieces that
        touch it (``input-topic``, ``old-key``). The result is quoted, as a
        hyphenated name must be in Spark SQL."""
        if (
            not isinstance(part, exp.Identifier)
            or part.quoted
            or not self._prev
            or self._prev.end != part.meta_get("end")
        ):
            return part

        pieces = [part.name]
        while (
            self._curr.token_type == TokenType.DASH
            and self._curr.start == self._prev.end + 1
            and self._next
            and self._next.start == self._curr.end + 1
            and is_word_token(self._next)
        ):
            self._advance(2)
            pieces.append(self._prev.text)

        if len(pieces) == 1:
            return part
        glued = exp.Identifier(this="-".join(pieces), quoted=True).update_positions(part)
        glued.meta["end"] = self._prev.end
        glued.add_comments(part.pop_comments())
        return glued

    def _parse_name_part(self) -> exp.Identifier | None:
        token = self._curr
        if token.token_type == TokenType.IDENTIFIER:
            return t.cast(exp.Identifier, self._parse_identifier())
        if not is_word_token(token) or token.token_type not in self.ID_VAR_TOKENS:
            return None
        return t.cast(exp.Identifier, self._glue_hyphens(self._parse_id_var(any_token=False)))

    def _parse_object_name(self) -> exp.Identifier | None:
        """A statement's name: parts joined by dots, each possibly
        hyphenated, kept whole in one identifier (``stocks.order_quantity``,
        ``target-topic``) as :func:`splice.sql.expressions.table_name` reads a table."""
        first = self._parse_name_part()
        if first is None:
            return None
        parts = [first]
        while self._curr.token_type == TokenType.DOT and (
            is_word_token(self._next) or self._next.token_type == TokenType.IDENTIFIER
        ):
            self._advance()
            part = self._parse_name_part()
            if part is None:
                self._fail("syntax error: expected a name after '.'",
                           "write dotted names as a.b")
            parts.append(part)
        if len(parts) == 1:
            return first
        name = exp.Identifier(
            this=".".join(part.name for part in parts),
            quoted=any(part.quoted for part in parts),
        ).update_positions(first)
        name.meta["end"] = self._prev.end
        return name

    def _parse_dotted_word(self) -> exp.Identifier | None:
        """A setting or option name such as ``join.late.match.retention``:
        words of any kind (keywords included) joined by dots or hyphens."""
        if not is_word_token(self._curr):
            return None
        start = self._curr
        words: list[str] = []
        while True:
            self._advance()
            glued = self._glue_hyphens(self._identifier_expression(self._prev))
            words.append(t.cast(exp.Identifier, glued).name)
            if not (self._curr.token_type == TokenType.DOT and is_word_token(self._next)):
                break
            self._advance()
        word = exp.Identifier(this=".".join(words), quoted=False).update_positions(start)
        word.meta["end"] = self._prev.end
        return word

    def _parse_table_part(self, schema: bool = False) -> exp.Expr | None:
        return self._glue_hyphens(super()._parse_table_part(schema=schema))

    def _parse_table_alias(
        self, alias_tokens: t.Collection[TokenType] | None = None
    ) -> exp.TableAlias | None:
        curr = self._curr
        if curr.token_type not in QUOTED_TOKENS and (
            curr.text.upper() in _NOT_TABLE_ALIASES
            or (is_text(curr, "EMIT") and is_text(self._next, "CHANGES"))
        ):
            return None
        alias = super()._parse_table_alias(alias_tokens)
        if alias is not None and not alias.args.get("columns"):
            alias.set("this", self._glue_hyphens(alias.this))
        return alias
