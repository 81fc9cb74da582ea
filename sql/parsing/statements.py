"""Pipeline statements: ``CREATE ... AS SELECT``, ``INSERT INTO``, Lenses'
standalone ``WITH name AS (...)``, ``SET`` and ``EXPLAIN``. The body of a
source declaration is in :mod:`splice.sql.parsing.sources`."""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.parsing.lexical import is_text
from splice.sql.parsing.sources import SourceParser
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

# What a pipeline may hold, in the words error messages use.
PIPELINE_STATEMENTS = (
    "CREATE STREAM|TABLE|SOURCE name (columns) WITH (...), "
    "CREATE STREAM|TABLE name AS SELECT ..., CREATE MATERIALIZED VIEW name AS SELECT ..., "
    "INSERT INTO name SELECT ..., WITH name AS (SELECT ...), SET name = value "
    "and EXPLAIN <statement>"
)


class StatementParser(SourceParser):
    """Statements, each parsed into a node of :data:`splice.sql.expressions.STATEMENT_TYPES`."""

    STATEMENT_PARSERS: t.ClassVar = {
        **Spark.Parser.STATEMENT_PARSERS,
        TokenType.CREATE: lambda self: self._parse_splice_create(),
        TokenType.INSERT: lambda self: self._parse_splice_insert(),
        TokenType.SET: lambda self: self._parse_set_option(),
    }

    def _parse_statement(self) -> exp.Expr | None:
        start = self._curr
        if not start:
            return None

        statement: exp.Expr | None = None
        if is_text(start, "EXPLAIN"):
            statement = self._parse_explain()
        elif start.token_type == TokenType.WITH:
            statement = self._parse_with_step()
        if statement is None:
            statement = super()._parse_statement()

        if isinstance(statement, expressions.STATEMENT_TYPES):
            statement.meta.setdefault("offset", start.start)
        return statement

    def _parse_explain(self) -> expressions.Explain:
        self._advance()
        first = self._curr
        if not first:
            self._fail("syntax error: EXPLAIN needs a statement to explain",
                       "write EXPLAIN followed by a pipeline statement, e.g. "
                       "EXPLAIN INSERT INTO out SELECT ...")
        inner = self._parse_statement()
        if (not isinstance(inner, expressions.STATEMENT_TYPES)
                or isinstance(inner, expressions.Explain)):
            self._fail(f"EXPLAIN explains one pipeline statement: {PIPELINE_STATEMENTS}",
                       "put one of these statements after EXPLAIN", first)
        return self.expression(expressions.Explain(this=inner))

    def _parse_with_step(self) -> expressions.WithStep | None:
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
        return self.expression(expressions.WithStep(this=name, expression=query))

    def _parse_splice_create(self) -> expressions.CreateAs | expressions.CreateSource:
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
            # ksqlDB's CREATE STREAM|TABLE name WITH (kafka_topic=...) AS SELECT:
            # an output that is also written to a topic.
            start = self._index
            self._advance()
            options = self._parse_source_options(f"CREATE {kind} {name.name}")
            if kind in ("STREAM", "TABLE") and self._match(TokenType.ALIAS):
                return self._parse_create_as(kind, name, options)
            if is_text(self._curr, "FORMAT") and self._next.token_type != TokenType.L_PAREN:
                # RisingWave: CREATE SOURCE name WITH (...) FORMAT ... ENCODE AVRO (...),
                # the columns the registry's (the analyzer refuses other encodings)
                row_format, row_encode, encode_options = self._parse_row_format(
                    f"CREATE {kind} {name.name}")
                return self.expression(expressions.CreateSource(
                    this=name, kind=kind, expressions=[], options=options,
                    row_format=row_format, row_encode=row_encode,
                    encode_options=encode_options))
            if kind in ("STREAM", "TABLE") and _infers_columns(options):
                # ksqlDB: the columns come from the registry's value schema
                # (splice.sql.value_schemas), the key's alone may be declared.
                return self.expression(expressions.CreateSource(
                    this=name, kind=kind, expressions=[], options=options))
            self._retreat(start)
            self._fail(f"CREATE {kind} {name.name} needs a column list before WITH (...), "
                       "or AS SELECT after it",
                       f"declare the columns: CREATE {kind} {name.name} (id INT, ...) "
                       f"WITH (...), or write an output on a topic: CREATE {kind} "
                       f"{name.name} WITH (kafka_topic='...') AS SELECT ...")
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

    def _parse_create_as(self, kind: str, name: exp.Identifier,
                         options: list[exp.Property] | None = None) -> expressions.CreateAs:
        if kind == "SOURCE":
            self._fail("CREATE SOURCE declares a source and cannot be AS SELECT",
                       f"write CREATE STREAM {name.name} AS SELECT ... for a derived stream",
                       self._prev)
        query = self._parse_statement_query(f"CREATE {kind} {name.name} AS")
        emit_changes = self._parse_emit_changes()
        return self.expression(
            expressions.CreateAs(this=name, kind=kind, expression=query, emit_changes=emit_changes,
                           options=options)
        )

    def _parse_splice_insert(self) -> expressions.InsertInto:
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
        return self.expression(expressions.InsertInto(this=name, expression=query))

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
        if not is_text(self._curr, "EMIT"):
            return False
        if not self._match_text_seq("EMIT", "CHANGES"):
            self._fail("syntax error: only EMIT CHANGES is supported after a query",
                       "write EMIT CHANGES, or nothing: every Splice query emits changes")
        return True

    def _parse_set_option(self) -> expressions.SetOption:
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
        return self.expression(expressions.SetOption(this=name.name, expression=value))


def _infers_columns(options: list[exp.Expression] | None) -> bool:
    """Whether a source's WITH (...) names a value format whose columns the
    schema registry gives (ksqlDB's VALUE_FORMAT or FORMAT 'AVRO')."""
    for prop in options or []:
        value = prop.args.get("value")
        text = value.name if isinstance(value, exp.Expression) else str(value)
        if prop.name.lower() in ("value_format", "format") and text.lower() == "avro":
            return True
    return False
