"""The Splice dialect: Spark SQL plus the streaming-join syntax of Lenses, ksqlDB,
SQLstream s-Server and RisingWave.

``Splice`` is a sqlglot dialect built on Spark's. Expressions stay standard
sqlglot nodes (so ``expr.sql(dialect="spark")`` gives valid Spark SQL); what
the streaming dialects add is parsed into the nodes of :mod:`sql.nodes` or into
extra arguments of standard nodes, as that module's docstring describes.

The parser works on tokens only. Two lexical points need care:

- Durations such as ``5s``, ``1h`` and ``500ms`` are single VAR tokens (Spark
  lets identifiers start with a digit), so the unit suffixes that Spark reads
  as numeric literal types (``5S`` = SMALLINT, ``1D`` = DOUBLE) are dropped
  from the Splice tokenizer.
- Hyphenated names (``input-topic``) are recognised where a name stands (a
  table, an alias, a statement's target) by token adjacency: the ``-`` touches
  both neighbours. ``a - b`` and ``a-b`` inside an expression stay subtraction.
"""

from __future__ import annotations

import typing as t
from decimal import Decimal, InvalidOperation

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel, ParseError
from sqlglot.parser import SENTINEL_NONE
from sqlglot.tokens import Token, TokenType

from sql import nodes

_E = t.TypeVar("_E", bound=exp.Expr)

# The canonical unit name for each length of unit in nodes.UNIT_MILLIS.
CANONICAL_UNITS: dict[int, str] = {
    1: "MILLISECOND",
    1_000: "SECOND",
    60_000: "MINUTE",
    3_600_000: "HOUR",
    86_400_000: "DAY",
}

# What a pipeline may hold, in the words error messages use.
PIPELINE_STATEMENTS = (
    "CREATE STREAM|TABLE|SOURCE name (columns) WITH (...), "
    "CREATE STREAM|TABLE name AS SELECT ..., CREATE MATERIALIZED VIEW name AS SELECT ..., "
    "INSERT INTO name SELECT ..., WITH name AS (SELECT ...), SET name = value "
    "and EXPLAIN <statement>"
)

DURATION_EXAMPLES = "5s, 500ms, 5 SECONDS, 1 HOUR or INTERVAL '5' SECOND"

# Window functions RisingWave allows in FROM, with their number of arguments.
WINDOW_FUNCTIONS: dict[str, int] = {"TUMBLE": 3, "HOP": 4}

# Words that follow a join's table and so must never be read as its alias.
_NOT_TABLE_ALIASES = frozenset({"WITHIN", "GRACE"})

# Where a parsed pre-ON window waits (on the join's table) for its exp.Join.
_JOIN_WINDOW_META = "splice_join_window"

# Token types whose text was quoted in the source: never a keyword or a bare word.
_QUOTED_TOKENS = frozenset(
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
    if not token or token.token_type in _QUOTED_TOKENS or not token.text:
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
    if not amount or not amount[0].isdigit() or unit.upper() not in nodes.UNIT_MILLIS:
        return None
    return amount, unit


class _JoinWindow(t.NamedTuple):
    """A join's window clauses: ``WITHIN ...`` and ``GRACE PERIOD ...``."""

    within: nodes.Within | None
    grace: nodes.Duration | None


class Splice(Spark):
    """Spark SQL with the streaming-join statements and clauses of Splice."""

    class Tokenizer(Spark.Tokenizer):
        # Double quotes quote identifiers (standard SQL, s-Server, RisingWave);
        # strings use single quotes, with '' (standard) or \' (Spark) for a quote.
        QUOTES: t.ClassVar[list[tuple[str, str] | str]] = ["'"]
        IDENTIFIERS: t.ClassVar[list[str | tuple[str, str]]] = ['"', "`"]
        STRING_ESCAPES: t.ClassVar[list[str]] = ["'", "\\"]

        # 5s, 1d ... are durations, not SMALLINT / DOUBLE literals.
        NUMERIC_LITERALS: t.ClassVar[dict[str, str]] = {
            suffix: type_name
            for suffix, type_name in Spark.Tokenizer.NUMERIC_LITERALS.items()
            if suffix.upper() not in nodes.UNIT_MILLIS
        }

        # EXPLAIN is a Splice statement, not an opaque command.
        KEYWORDS: t.ClassVar[dict[str, TokenType]] = {
            key: token_type
            for key, token_type in Spark.Tokenizer.KEYWORDS.items()
            if key != "EXPLAIN"
        }

    class Parser(Spark.Parser):
        # Lenses' `FROM a JOIN b` has no condition; it is not `ON TRUE`.
        ADD_JOIN_ON_TRUE = False

        # s-Server's `stream OVER (...)` : OVER is never a table alias.
        TABLE_ALIAS_TOKENS: t.ClassVar[set] = Spark.Parser.TABLE_ALIAS_TOKENS - {TokenType.OVER}

        EXPRESSION_PARSERS: t.ClassVar = {
            **Spark.Parser.EXPRESSION_PARSERS,
            nodes.Duration: lambda self: self._parse_required_duration("the setting"),
        }

        STATEMENT_PARSERS: t.ClassVar = {
            **Spark.Parser.STATEMENT_PARSERS,
            TokenType.CREATE: lambda self: self._parse_splice_create(),
            TokenType.INSERT: lambda self: self._parse_splice_insert(),
            TokenType.SET: lambda self: self._parse_set_option(),
        }

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
            # Set while exp.Join parsing is about to read the join's table.
            self._join_table_pending = False

        def reset(self) -> None:
            super().reset()
            self._pending_result_kind = None
            self._join_table_pending = False

        # ------------------------------------------------------------------
        # Errors

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

        # ------------------------------------------------------------------
        # Statements

        def _parse_statement(self) -> exp.Expr | None:
            start = self._curr
            if not start:
                return None

            statement: exp.Expr | None = None
            if _is_text(start, "EXPLAIN"):
                statement = self._parse_explain()
            elif start.token_type == TokenType.WITH:
                statement = self._parse_with_step()
            if statement is None:
                statement = super()._parse_statement()

            if isinstance(statement, nodes.STATEMENT_TYPES):
                statement.meta.setdefault("offset", start.start)
            return statement

        def _parse_explain(self) -> nodes.Explain:
            self._advance()
            first = self._curr
            if not first:
                self._fail("syntax error: EXPLAIN needs a statement to explain",
                           "write EXPLAIN followed by a pipeline statement, e.g. "
                           "EXPLAIN INSERT INTO out SELECT ...")
            inner = self._parse_statement()
            if not isinstance(inner, nodes.STATEMENT_TYPES) or isinstance(inner, nodes.Explain):
                self._fail(f"EXPLAIN explains one pipeline statement: {PIPELINE_STATEMENTS}",
                           "put one of these statements after EXPLAIN", first)
            return self.expression(nodes.Explain(this=inner))

        def _parse_with_step(self) -> nodes.WithStep | None:
            """Lenses' standalone ``WITH name AS (SELECT ...)``. Anything else
            that starts with WITH (a CTE in front of a query) is left to the
            standard parser, and the script rejects it as not a pipeline
            statement."""
            index = self._index
            self._advance()
            name = self._parse_object_name()
            if name is None or not self._match(TokenType.ALIAS) or not self._match(
                TokenType.L_PAREN
            ):
                self._retreat(index)
                return None

            query = self._parse_statement_query(f"WITH {name.name} AS (")
            if not self._match(TokenType.R_PAREN):
                self._fail(f"syntax error: expected ')' to close WITH {name.name} AS (SELECT ...)",
                           "close the parenthesis after the query")
            if self._curr:
                if self._curr.token_type == TokenType.COMMA:
                    self._fail("a WITH statement names exactly one step",
                               "write one `WITH name AS (SELECT ...);` statement per step")
                self._retreat(index)
                return None
            return self.expression(nodes.WithStep(this=name, expression=query))

        def _parse_splice_create(self) -> nodes.CreateAs | nodes.CreateSource:
            kind = self._parse_create_kind()
            if kind is None:
                self._fail("syntax error: expected STREAM, TABLE, SOURCE or MATERIALIZED VIEW "
                           "after CREATE",
                           "declare a source with CREATE STREAM|TABLE|SOURCE name (...) WITH "
                           "(...), or an output with CREATE STREAM|TABLE name AS SELECT ...")

            name = self._parse_object_name()
            if name is None:
                self._fail(f"syntax error: expected a name after CREATE {kind}",
                           f"write CREATE {kind} <name> ...")

            if self._match(TokenType.ALIAS):
                return self._parse_create_as(kind, name)
            if kind == "MATERIALIZED VIEW":
                self._fail(f"syntax error: expected AS SELECT after CREATE MATERIALIZED VIEW "
                           f"{name.name}",
                           f"write CREATE MATERIALIZED VIEW {name.name} AS SELECT ...")
            if self._match(TokenType.WITH, advance=False) and self._next.token_type == (
                TokenType.L_PAREN
            ):
                self._fail(f"CREATE {kind} {name.name} needs a column list before WITH (...)",
                           f"declare the columns: CREATE {kind} {name.name} (id INT, ...) "
                           "WITH (...)")
            if not self._match(TokenType.L_PAREN):
                self._fail(f"syntax error: expected '(' and a column list, or AS SELECT, after "
                           f"CREATE {kind} {name.name}",
                           f"declare a source as CREATE {kind} {name.name} (id INT, ...) "
                           f"WITH (location='...'), or derive one with CREATE {kind} "
                           f"{name.name} AS SELECT ...")
            return self._parse_create_source(kind, name)

        def _parse_create_kind(self) -> str | None:
            if self._match_text_seq("MATERIALIZED", "VIEW"):
                return "MATERIALIZED VIEW"
            if self._match_texts(("STREAM", "TABLE", "SOURCE")):
                return self._prev.text.upper()
            return None

        def _parse_create_as(self, kind: str, name: exp.Identifier) -> nodes.CreateAs:
            if kind == "SOURCE":
                self._fail("CREATE SOURCE declares a source and cannot be AS SELECT",
                           f"write CREATE STREAM {name.name} AS SELECT ... for a derived stream",
                           self._prev)
            query = self._parse_statement_query(f"CREATE {kind} {name.name} AS")
            emit_changes = self._parse_emit_changes()
            return self.expression(
                nodes.CreateAs(this=name, kind=kind, expression=query, emit_changes=emit_changes)
            )

        def _parse_create_source(self, kind: str, name: exp.Identifier) -> nodes.CreateSource:
            context = f"CREATE {kind} {name.name}"
            columns: list[exp.Expr] = []
            watermark: nodes.Watermark | None = None
            while True:
                if self._match_text_seq("WATERMARK", "FOR"):
                    if watermark is not None:
                        self._fail(f"{context} declares more than one WATERMARK",
                                   "keep one WATERMARK FOR <column> AS <expression>",
                                   self._tokens[self._index - 2])
                    watermark = self._parse_watermark(context)
                else:
                    columns.append(self._parse_source_column(context))

                if self._match(TokenType.COMMA):
                    continue
                if self._match(TokenType.R_PAREN):
                    break
                self._fail(f"syntax error: expected ',' or ')' after a column in the column "
                           f"list of {context}",
                           "separate the columns with ',' and close the list with ')'")

            if not columns:
                self._fail(f"{context} declares no columns", "declare at least one column")

            options = self._parse_source_options(context) if self._match(TokenType.WITH) else None
            return self.expression(
                nodes.CreateSource(this=name, kind=kind, expressions=columns,
                                   watermark=watermark, options=options)
            )

        def _parse_source_column(self, context: str) -> exp.Expr:
            first = self._curr
            named = is_word_token(first) or first.token_type == TokenType.IDENTIFIER
            column = self._parse_field_def() if named else None
            if isinstance(column, exp.Identifier) or (
                isinstance(column, exp.ColumnDef) and not column.args.get("kind")
            ):
                self._fail(f"syntax error: column {column.name} of {context} has no type",
                           f"give it a type: {column.name} STRING, {column.name} INT, ...",
                           self._curr or SENTINEL_NONE)
            if not isinstance(column, exp.ColumnDef) or not isinstance(column.this,
                                                                       exp.Identifier):
                self._fail(f"syntax error: expected a column name and type in the column list of "
                           f"{context}", "declare each column as <name> <type>, e.g. id INT",
                           first or SENTINEL_NONE)
            return column

        def _parse_watermark(self, context: str) -> nodes.Watermark:
            column = self._parse_id_var(any_token=False)
            if not isinstance(column, exp.Identifier):
                self._fail(f"syntax error: expected the time column after WATERMARK FOR in "
                           f"{context}", "write WATERMARK FOR ts AS ts - INTERVAL '5' SECOND")
            if not self._match(TokenType.ALIAS):
                self._fail(f"syntax error: expected AS after WATERMARK FOR {column.name}",
                           f"write WATERMARK FOR {column.name} AS {column.name} - "
                           "INTERVAL '5' SECOND")
            expression = self._parse_assignment()
            if expression is None:
                self._fail(f"syntax error: expected an expression after WATERMARK FOR "
                           f"{column.name} AS", f"write {column.name} - INTERVAL '5' SECOND")
            return self.expression(nodes.Watermark(this=column, expression=expression))

        def _parse_source_options(self, context: str) -> list[exp.Property]:
            if not self._match(TokenType.L_PAREN):
                self._fail(f"syntax error: expected '(' after WITH in {context}",
                           "write WITH (location='...', key='...')")
            options: list[exp.Property] = []
            while True:
                name = self._parse_dotted_word() or self._parse_string_as_identifier()
                if name is None:
                    self._fail(f"syntax error: expected an option name in the WITH (...) of "
                               f"{context}",
                               "write options as name='value', e.g. location='orders'")
                if not self._match(TokenType.EQ):
                    self._fail(f"syntax error: expected '=' after the option {name.name} of "
                               f"{context}", f"write {name.name}='value'")
                value = self._parse_plain_value()
                if value is None:
                    self._fail(f"syntax error: expected a value for the option {name.name} of "
                               f"{context}", f"write {name.name}='value'")
                options.append(self.expression(exp.Property(this=exp.var(name.name), value=value)))

                if self._match(TokenType.COMMA):
                    continue
                if self._match(TokenType.R_PAREN):
                    return options
                self._fail(f"syntax error: expected ',' or ')' after an option in the WITH (...) "
                           f"of {context}", "separate options with ',' and close the list with ')'")

        def _parse_splice_insert(self) -> nodes.InsertInto:
            if not self._match(TokenType.INTO):
                self._fail("syntax error: expected INTO after INSERT",
                           "write INSERT INTO <name> SELECT ...")

            name = self._parse_object_name()
            if name is None:
                self._fail("syntax error: expected the output's name after INSERT INTO",
                           "write INSERT INTO <name> SELECT ...")
            query = self._parse_statement_query(f"INSERT INTO {name.name}")
            # ksqlDB writes EMIT CHANGES on every push query; here every query is one.
            self._parse_emit_changes()
            return self.expression(nodes.InsertInto(this=name, expression=query))

        def _parse_statement_query(self, context: str) -> exp.Expr:
            """The query of a statement: a SELECT (or a WITH ... SELECT)."""
            if not self._match_set((TokenType.SELECT, TokenType.WITH), advance=False):
                self._fail(f"syntax error: expected SELECT after {context}",
                           f"write {context} SELECT ...")
            query = self._parse_select()
            if not isinstance(query, exp.Query):
                self._fail(f"syntax error: expected a query after {context}",
                           f"write {context} SELECT ...")
            return query

        def _parse_emit_changes(self) -> bool:
            if not _is_text(self._curr, "EMIT"):
                return False
            if not self._match_text_seq("EMIT", "CHANGES"):
                self._fail("syntax error: only EMIT CHANGES is supported after a query",
                           "write EMIT CHANGES, or nothing: every Splice query emits changes")
            return True

        def _parse_set_option(self) -> nodes.SetOption:
            name = self._parse_dotted_word() or self._parse_string_as_identifier()
            if name is None:
                self._fail("syntax error: expected a setting name after SET",
                           "write SET name = value, e.g. SET join.grace.period = '1 MINUTE'")
            if not (self._match(TokenType.EQ) or self._match_text_seq("TO")):
                self._fail(f"syntax error: expected '=' after SET {name.name}",
                           f"write SET {name.name} = value")
            value = self._parse_plain_value()
            if value is None:
                self._fail(f"syntax error: expected a value after SET {name.name} =",
                           "give a string, a number, true/false or a word, e.g. '1 HOUR'")
            return self.expression(nodes.SetOption(this=name.name, expression=value))

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

        # ------------------------------------------------------------------
        # Names

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
            ``target-topic``) as :func:`sql.nodes.table_name` reads a table."""
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
            if curr.token_type not in _QUOTED_TOKENS and (
                curr.text.upper() in _NOT_TABLE_ALIASES
                or (_is_text(curr, "EMIT") and _is_text(self._next, "CHANGES"))
            ):
                return None
            alias = super()._parse_table_alias(alias_tokens)
            if alias is not None and not alias.args.get("columns"):
                alias.set("this", self._glue_hyphens(alias.this))
            return alias

        # ------------------------------------------------------------------
        # SELECT

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
            if curr.token_type in _QUOTED_TOKENS or curr.text.upper() not in ("STREAM", "TABLE"):
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
            ``expr AS x.a`` (a :class:`nodes.PathAlias`); aliases may be
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
            path_alias = self.expression(nodes.PathAlias(this=this.this, path=path))
            path_alias.add_comments(this.pop_comments())
            return path_alias

        # ------------------------------------------------------------------
        # FROM: tables, windows, joins

        def _parse_table(
            self,
            schema: bool = False,
            joins: bool = False,
            alias_tokens: t.Collection[TokenType] | None = None,
            parse_bracket: bool = False,
            is_db_reference: bool = False,
            parse_partition: bool = False,
            consume_pipe: bool = False,
        ) -> exp.Expr | None:
            join_table, self._join_table_pending = self._join_table_pending, False
            plain = not schema and not is_db_reference

            if plain and self._at_window_function():
                node: exp.Expr | None = self._parse_window_table()
            else:
                node = super()._parse_table(
                    schema=schema,
                    joins=joins,
                    alias_tokens=alias_tokens,
                    parse_bracket=parse_bracket,
                    is_db_reference=is_db_reference,
                    parse_partition=parse_partition,
                    consume_pipe=consume_pipe,
                )

            if plain and isinstance(node, exp.Table):
                self._finish_table(node)
            if join_table and node is not None:
                window = self._parse_join_window()
                if window.within or window.grace:
                    node.meta[_JOIN_WINDOW_META] = window
            return node

        def _parse_table_parts(
            self,
            schema: bool = False,
            is_db_reference: bool = False,
            wildcard: bool = False,
            fast: bool = False,
        ) -> exp.Table | exp.Dot | None:
            table = super()._parse_table_parts(
                schema=schema, is_db_reference=is_db_reference, wildcard=wildcard, fast=fast
            )
            if not fast and not schema and not is_db_reference and isinstance(table, exp.Table):
                # s-Server writes the window between the name and the alias.
                window = self._parse_stream_window()
                if window is not None:
                    table.set("stream_window", window)
            return table

        def _finish_table(self, table: exp.Table) -> None:
            """Splice's table clauses that may follow the alias:
            ``FOR SYSTEM_TIME AS OF PROCTIME()`` (parsed by sqlglot as a
            Version) and an ``OVER (...)`` window."""
            version = table.args.get("version") or self._parse_version()
            if version is not None:
                table.set("version", None)
                table.set("proctime", True)
            if not table.args.get("stream_window"):
                window = self._parse_stream_window()
                if window is not None:
                    table.set("stream_window", window)

        def _parse_version(self) -> exp.Version | None:
            """sqlglot's time-travel clause; Splice accepts only RisingWave's
            ``FOR SYSTEM_TIME AS OF PROCTIME()``."""
            clause = self._curr
            version = super()._parse_version()
            if version is not None and not _is_proctime(version):
                self._fail("only FOR SYSTEM_TIME AS OF PROCTIME() is supported on a table",
                           "write FOR SYSTEM_TIME AS OF PROCTIME() for a stream-table join, "
                           "or remove the clause", clause)
            return version

        def _at_window_function(self) -> bool:
            return (
                self._curr.token_type not in _QUOTED_TOKENS
                and self._curr.text.upper() in WINDOW_FUNCTIONS
                and self._next.token_type == TokenType.L_PAREN
            )

        def _parse_window_table(self) -> nodes.WindowTable:
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
                nodes.WindowTable(this=source, kind=kind, column=column, size=size, slide=slide,
                                  alias=self._parse_table_alias()),
                opening,
            )

        def _expect_comma(self, call: str) -> None:
            if not self._match(TokenType.COMMA):
                self._fail(f"syntax error: expected ',' between the arguments of {call}",
                           f"write {call}")

        def _parse_stream_window(self) -> nodes.StreamWindow | None:
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
            return self.expression(nodes.StreamWindow(this=width, kind=kind), over)

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

        def _parse_join(
            self,
            skip_join_token: bool = False,
            parse_bracket: bool = False,
            alias_tokens: t.Collection[TokenType] | None = None,
        ) -> exp.Join | None:
            start = self._index
            self._join_table_pending = True
            try:
                join = super()._parse_join(
                    skip_join_token=skip_join_token,
                    parse_bracket=parse_bracket,
                    alias_tokens=alias_tokens,
                )
            finally:
                self._join_table_pending = False
            if isinstance(join, exp.Join):
                self._finish_join(join, start)
            return join

        def _finish_join(self, join: exp.Join, start: int) -> None:
            """Attach the join's windows (before or after ON), its offset, and
            normalise what the dialects spell differently."""
            first = self._tokens[start]
            comma = first.token_type == TokenType.COMMA
            if comma and start + 1 < self._tokens_size:
                first = self._tokens[start + 1]
            join.meta["offset"] = first.start

            this = join.this
            before = this.meta.pop(_JOIN_WINDOW_META, None) if this is not None else None
            after = self._parse_join_window()
            if before and after.within and before.within:
                self._fail("a join has one WITHIN window, given here a second time",
                           "keep one WITHIN, before or after ON")
            if before and after.grace and before.grace:
                self._fail("a join has one GRACE PERIOD, given here a second time",
                           "keep one GRACE PERIOD")
            within = (before.within if before else None) or after.within
            grace = (before.grace if before else None) or after.grace
            if within is not None:
                join.set("within", within)
            if grace is not None:
                join.set("grace", grace)

            # LEFT OUTER = LEFT; Lenses' bare OUTER JOIN = FULL; a comma = CROSS.
            if join.kind == "OUTER":
                join.set("kind", None)
                if not join.side:
                    join.set("side", "FULL")
            if comma:
                join.set("kind", "CROSS")
            on = join.args.get("on")
            if isinstance(on, exp.Paren):
                join.set("on", on.this)

        def _parse_join_window(self) -> _JoinWindow:
            within: nodes.Within | None = None
            grace: nodes.Duration | None = None
            if self._match_text_seq("WITHIN"):
                if self._match(TokenType.L_PAREN):
                    before = self._parse_required_duration("WITHIN (")
                    if not self._match(TokenType.COMMA):
                        self._fail("syntax error: expected ',' between the two durations of "
                                   "WITHIN (before, after)", "write WITHIN (1 MINUTE, 2 MINUTES)")
                    after = self._parse_required_duration("WITHIN (before,")
                    if not self._match(TokenType.R_PAREN):
                        self._fail("syntax error: expected ')' to close WITHIN (before, after)",
                                   "write WITHIN (1 MINUTE, 2 MINUTES)")
                    within = self.expression(nodes.Within(this=before, expression=after))
                else:
                    within = self.expression(
                        nodes.Within(this=self._parse_required_duration("WITHIN"))
                    )
            if self._match_text_seq("GRACE"):
                if not self._match_text_seq("PERIOD"):
                    self._fail("syntax error: expected PERIOD after GRACE",
                               "write GRACE PERIOD 5 SECONDS")
                grace = self._parse_required_duration("GRACE PERIOD")
            return _JoinWindow(within, grace)

        # ------------------------------------------------------------------
        # Durations

        def _parse_required_duration(self, context: str) -> nodes.Duration:
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

        def _parse_duration(self) -> nodes.Duration | None:
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
            if token.token_type == TokenType.NUMBER and _is_unit(self._next):
                self._advance(2)
                return self._make_duration(token.text, self._prev.text, token)
            return None

        def _duration_from_interval(
            self, interval: exp.Expr | None, token: Token
        ) -> nodes.Duration:
            amount = interval.this if isinstance(interval, exp.Interval) else None
            unit = interval.args.get("unit") if isinstance(interval, exp.Interval) else None
            if not isinstance(amount, exp.Literal) or not isinstance(unit, exp.Var):
                self._fail("syntax error: expected one amount and one unit in this INTERVAL",
                           "write INTERVAL '5' SECOND or INTERVAL '1 minute'", token)
            return self._make_duration(amount.name, unit.name, token)

        def _make_duration(self, amount: str, unit: str, token: Token) -> nodes.Duration:
            unit_millis = nodes.UNIT_MILLIS.get(unit.upper())
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
            return self.expression(
                nodes.Duration(this=exp.Literal.number(amount),
                               unit=CANONICAL_UNITS[unit_millis], millis=int(millis)),
                token,
            )

    class Generator(Spark.Generator):
        TRANSFORMS: t.ClassVar = {
            **Spark.Generator.TRANSFORMS,
            nodes.Duration: lambda self, e: self.duration_sql(e),
            nodes.Within: lambda self, e: self.within_sql(e),
            nodes.StreamWindow: lambda self, e: self.streamwindow_sql(e),
            nodes.WindowTable: lambda self, e: self.windowtable_sql(e),
            nodes.PathAlias: lambda self, e: self.pathalias_sql(e),
            nodes.Watermark: lambda self, e: self.watermark_sql(e),
            nodes.CreateSource: lambda self, e: self.createsource_sql(e),
            nodes.CreateAs: lambda self, e: self.createas_sql(e),
            nodes.InsertInto: lambda self, e: self.insertinto_sql(e),
            nodes.WithStep: lambda self, e: self.withstep_sql(e),
            nodes.SetOption: lambda self, e: self.setoption_sql(e),
            nodes.Explain: lambda self, e: self.explain_sql(e),
        }

        # Where an unquoted hyphenated name reads back as one name.
        _HYPHEN_NAME_PARENTS: t.ClassVar[tuple[type[exp.Expr], ...]] = (
            exp.Table,
            exp.TableAlias,
            exp.Alias,
            nodes.PathAlias,
        )
        _STATEMENT_NAME_PARENTS: t.ClassVar[tuple[type[exp.Expr], ...]] = (
            nodes.CreateSource,
            nodes.CreateAs,
            nodes.InsertInto,
            nodes.WithStep,
        )

        def identifier_sql(self, expression: exp.Identifier) -> str:
            """Hyphenated names print unquoted where a name stands (``FROM
            input-topic``, ``AS old-key``) and dotted statement names whole
            (``CREATE STREAM stocks.order_quantity``); elsewhere, and in Spark,
            they are quoted."""
            parent = expression.parent
            name = expression.name
            if isinstance(parent, self._STATEMENT_NAME_PARENTS):
                bare = ("-" in name or "." in name) and is_bare_name(name, "-.")
            else:
                bare = isinstance(parent, self._HYPHEN_NAME_PARENTS) and (
                    "-" in name and is_bare_name(name, "-")
                )
            return name if bare else super().identifier_sql(expression)

        # -- durations and windows

        def duration_sql(self, expression: nodes.Duration) -> str:
            amount = expression.this.name
            unit = str(expression.args["unit"])
            return f"{amount} {unit}" if amount == "1" else f"{amount} {unit}S"

        def interval_duration_sql(self, expression: nodes.Duration) -> str:
            return f"INTERVAL '{expression.this.name}' {expression.args['unit']}"

        def within_sql(self, expression: nodes.Within) -> str:
            after = expression.args.get("expression")
            if after is None:
                return f"WITHIN {self.sql(expression, 'this')}"
            return f"WITHIN ({self.sql(expression, 'this')}, {self.sql(after)})"

        def streamwindow_sql(self, expression: nodes.StreamWindow) -> str:
            kind = expression.args["kind"]
            width = expression.this
            if width is None:
                extent = "CURRENT ROW"
            elif isinstance(width, nodes.Duration):
                extent = f"{self.interval_duration_sql(width)} PRECEDING"
            else:
                extent = f"{self.sql(width)} PRECEDING"
            return f"OVER ({kind} {extent})"

        def windowtable_sql(self, expression: nodes.WindowTable) -> str:
            args = [self.sql(expression, "this"), self.sql(expression, "column")]
            slide = expression.args.get("slide")
            if slide is not None:
                args.append(self.interval_duration_sql(slide))
            args.append(self.interval_duration_sql(expression.args["size"]))
            alias = self.sql(expression, "alias")
            alias = f" AS {alias}" if alias else ""
            return f"{expression.args['kind']}({', '.join(args)}){alias}"

        def pathalias_sql(self, expression: nodes.PathAlias) -> str:
            path = ".".join(self.sql(part) for part in expression.args["path"])
            return f"{self.sql(expression, 'this')} AS {path}"

        # -- SELECT, tables, joins

        def select_sql(self, expression: exp.Select) -> str:
            kind = expression.args.get("result_kind")
            if not kind:
                return super().select_sql(expression)
            select = expression.copy()
            select.set("result_kind", None)
            select.set(
                "operation_modifiers",
                [exp.var(kind), *(select.args.get("operation_modifiers") or [])],
            )
            return super().select_sql(select)

        def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
            window = expression.args.get("stream_window")
            proctime = expression.args.get("proctime")
            if window is None and not proctime:
                return super().table_sql(expression, sep)
            parts = [self.table_parts(expression)]
            if window is not None:
                parts.append(self.sql(window))
            if proctime:
                parts.append("FOR SYSTEM_TIME AS OF PROCTIME()")
            alias = self.sql(expression, "alias")
            sql = " ".join(parts)
            return f"{sql}{sep}{alias}" if alias else sql

        def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
            within = expression.args.get("within")
            grace = expression.args.get("grace")
            plain = not (expression.method or expression.side or expression.kind)
            conditionless = not (expression.args.get("on") or expression.args.get("using"))
            if within is None and grace is None and not (plain and conditionless):
                return super().join_sql(expression, join_op)

            op = " ".join(
                part for part in (expression.method, expression.side, expression.kind) if part
            )
            sql = f"{self.seg(f'{op} JOIN' if op else 'JOIN')} {self.sql(expression, 'this')}"
            if within is not None:
                sql = f"{sql} {self.sql(within)}"
            if grace is not None:
                sql = f"{sql} GRACE PERIOD {self.sql(grace)}"
            on = expression.args.get("on")
            using = expression.args.get("using")
            if on is not None:
                sql = f"{sql} ON {self.sql(on)}"
            elif using:
                columns = ", ".join(self.sql(column) for column in using)
                sql = f"{sql} USING ({columns})"
            return sql

        # -- statements

        def watermark_sql(self, expression: nodes.Watermark) -> str:
            return (
                f"WATERMARK FOR {self.sql(expression, 'this')} AS "
                f"{self.sql(expression, 'expression')}"
            )

        def createsource_sql(self, expression: nodes.CreateSource) -> str:
            columns = [self.sql(column) for column in expression.expressions]
            watermark = expression.args.get("watermark")
            if watermark is not None:
                columns.append(self.sql(watermark))
            sql = (
                f"CREATE {expression.args['kind']} {self.sql(expression, 'this')} "
                f"({', '.join(columns)})"
            )
            options = expression.args.get("options")
            if options:
                listed = ", ".join(
                    f"{self._option_name(option.name)}={self.sql(option, 'value')}"
                    for option in options
                )
                sql = f"{sql} WITH ({listed})"
            return sql

        def _option_name(self, name: str) -> str:
            return name if is_bare_name(name, ".-") else self.sql(exp.Literal.string(name))

        def createas_sql(self, expression: nodes.CreateAs) -> str:
            emit = " EMIT CHANGES" if expression.args.get("emit_changes") else ""
            return (
                f"CREATE {expression.args['kind']} {self.sql(expression, 'this')} AS "
                f"{self.sql(expression, 'expression')}{emit}"
            )

        def insertinto_sql(self, expression: nodes.InsertInto) -> str:
            name = self.sql(expression, "this")
            return f"INSERT INTO {name} {self.sql(expression, 'expression')}"

        def withstep_sql(self, expression: nodes.WithStep) -> str:
            return f"WITH {self.sql(expression, 'this')} AS ({self.sql(expression, 'expression')})"

        def setoption_sql(self, expression: nodes.SetOption) -> str:
            value = self.sql(expression, "expression")
            return f"SET {self._option_name(expression.name)} = {value}"

        def explain_sql(self, expression: nodes.Explain) -> str:
            return f"EXPLAIN {self.sql(expression, 'this')}"


# ----------------------------------------------------------------------
# Helpers


def _is_text(token: Token | None, text: str) -> bool:
    """Whether ``token`` is the unquoted word ``text`` (any case)."""
    return bool(token) and token.token_type not in _QUOTED_TOKENS and token.text.upper() == text


def _is_unit(token: Token | None) -> bool:
    return bool(token) and token.token_type not in _QUOTED_TOKENS and (
        token.text.upper() in nodes.UNIT_MILLIS
    )


def _is_proctime(version: exp.Expr) -> bool:
    """Whether a sqlglot Version node is ``FOR SYSTEM_TIME AS OF PROCTIME()``."""
    call = version.args.get("expression")
    return (
        str(version.this).upper() == "TIMESTAMP"
        and version.args.get("kind") == "AS OF"
        and isinstance(call, exp.Func)
        and call.name.upper() == "PROCTIME"
        and not call.expressions
    )


def _annotate(error: ParseError, offset: int, at_end: bool, token: Token | None) -> None:
    for info in error.errors:
        info.setdefault("offset", offset)
        info.setdefault("at_end", at_end)
        info.setdefault("token", token.text if token else "")


def parse_duration(text: str) -> nodes.Duration:
    """The duration written in ``text`` (``'1 HOUR'``, ``'500ms'``,
    ``INTERVAL '1' MINUTE``), e.g. a SET value. Raises sqlglot's ParseError
    (or TokenError) when ``text`` is not exactly one duration."""
    dialect = Splice()
    parser = dialect.parser(error_level=ErrorLevel.IMMEDIATE)
    parsed = parser.parse_into(nodes.Duration, dialect.tokenize(text), text)
    return t.cast(nodes.Duration, parsed[0])
