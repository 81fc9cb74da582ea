"""SELECT: the result kind (``SELECT STREAM`` / ``SELECT TABLE``) and
projections with dotted or hyphenated targets (``expr AS x.a``, ``AS old-key``)."""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.parsing.lexical import QUOTED_TOKENS, LexicalParser, is_word_token
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

_E = t.TypeVar("_E", bound=exp.Expr)


class SelectParser(LexicalParser):
    """The result kind and the projections of a SELECT."""

    # Tokens after `stream` / `table` in `SELECT stream ...` that make it a
    # column (the projection goes on) rather than the result kind.
    PROJECTION_CONTINUATIONS: t.ClassVar[frozenset] = frozenset(
        {
            TokenType.COMMA,
            TokenType.FROM,
            TokenType.DOT,
            TokenType.ALIAS,
            TokenType.R_PAREN,
            TokenType.SEMICOLON,
            TokenType.IS,
            TokenType.DPIPE,
            TokenType.INTO,
            *Spark.Parser.TERM,
            *Spark.Parser.FACTOR,
            *Spark.Parser.EQUALITY,
            *Spark.Parser.COMPARISON,
            *Spark.Parser.BITWISE,
            *Spark.Parser.CONJUNCTION,
            *Spark.Parser.DISJUNCTION,
            *Spark.Parser.RANGE_PARSERS,
            *Spark.Parser.COLUMN_OPERATORS,
            *Spark.Parser.QUERY_MODIFIER_PARSERS,
            *Spark.Parser.SET_OPERATIONS,
        }
        - {TokenType.STAR, TokenType.L_PAREN}
    )

    def __init__(self, *args: t.Any, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        # The result kind of the SELECT whose projections were just parsed.
        self._pending_result_kind: str | None = None

    def reset(self) -> None:
        super().reset()
        self._pending_result_kind = None

    def expression(
        self,
        instance: _E,
        token: Token | None = None,
        comments: list[str] | None = None,
    ) -> _E:
        """sqlglot's node factory. The SELECT built right after its
        projections were parsed receives their result kind (``SELECT
        STREAM``): exp.Select is made with no other node in between."""
        instance = super().expression(instance, token, comments)
        if self._pending_result_kind and isinstance(instance, exp.Select):
            instance.set("result_kind", self._pending_result_kind)
            self._pending_result_kind = None
        return instance

    def _parse_select_query(
        self,
        nested: bool = False,
        table: bool = False,
        parse_subquery_alias: bool = True,
        parse_set_operation: bool = True,
    ) -> exp.Expr | None:
        # A result kind left over by a failed attempt must not reach this SELECT.
        self._pending_result_kind = None
        return super()._parse_select_query(
            nested=nested,
            table=table,
            parse_subquery_alias=parse_subquery_alias,
            parse_set_operation=parse_set_operation,
        )

    def _parse_projections(self) -> tuple[list[exp.Expr], list[exp.Expr] | None]:
        kind = self._parse_result_kind()
        projections = self._parse_csv(self._parse_projection)
        # Set only now: subqueries among the projections make their own SELECTs.
        self._pending_result_kind = kind
        return projections, None

    def _parse_result_kind(self) -> str | None:
        """``STREAM`` / ``TABLE`` right after SELECT, unless it is a column
        of that name (``SELECT stream FROM t``, ``SELECT stream, x``)."""
        curr, after = self._curr, self._next
        if curr.token_type in QUOTED_TOKENS or curr.text.upper() not in ("STREAM", "TABLE"):
            return None
        if not after or after.token_type in self.PROJECTION_CONTINUATIONS:
            return None
        beyond = self._tokens[self._index + 2] if self._index + 2 < self._tokens_size else None
        if after.token_type == TokenType.NOT and (
            not beyond or beyond.token_type in (*self.RANGE_PARSERS, TokenType.NULL)
        ):
            # `SELECT stream NOT IN (...)`, `stream NOT LIKE ...`
            return None
        # `SELECT STREAM * FROM t` versus `SELECT stream * 2 FROM t`
        if after.token_type == TokenType.STAR and beyond and beyond.token_type not in (
            TokenType.FROM,
            TokenType.COMMA,
            TokenType.SEMICOLON,
        ):
            return None
        self._advance()
        return curr.text.upper()

    def _parse_projection(self) -> exp.Expr | None:
        """One projection: ``expr [AS] alias``, or the dotted target
        ``expr AS x.a`` (a :class:`expressions.PathAlias`); aliases may be
        hyphenated (``_key AS old-key``)."""
        this = self._parse_expression()
        if not isinstance(this, exp.Alias):
            return this
        alias = this.args.get("alias")
        if not isinstance(alias, exp.Identifier) or self._prev.end != alias.meta_get("end"):
            return this

        path = [t.cast(exp.Identifier, self._glue_hyphens(alias))]
        while self._curr.token_type == TokenType.DOT and (
            is_word_token(self._next) or self._next.token_type == TokenType.IDENTIFIER
        ):
            self._advance()
            part = self._parse_id_var(any_token=True)
            path.append(t.cast(exp.Identifier, self._glue_hyphens(part)))

        if len(path) == 1:
            this.set("alias", path[0])
            return this
        path_alias = self.expression(expressions.PathAlias(this=this.this, path=path))
        path_alias.add_comments(this.pop_comments())
        return path_alias
