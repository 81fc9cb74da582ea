"""The Splice dialect: Spark SQL plus the streaming-join syntax of Lenses, ksqlDB,
SQLstream s-Server and RisingWave.

``Splice`` is a sqlglot dialect built on Spark's, laid out as sqlglot's own
dialects are: the class names its tokenizer, parser and generator, whose bulk
lives elsewhere (the parser in :mod:`splice.sql.parsing`, one module per concern; the
generator in :mod:`splice.sql.generator`). Expressions stay standard sqlglot nodes
(so ``expr.sql(dialect="spark")`` gives valid Spark SQL); what the streaming
dialects add is parsed into the nodes of :mod:`splice.sql.expressions` or into extra
arguments of standard nodes, as that module's docstring describes. The
lexical points that need care are described in :mod:`splice.sql.parsing.lexical`.
"""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.generator import SpliceGenerator
from splice.sql.parsing.parser import SpliceParser
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel
from sqlglot.tokens import TokenType


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
            if suffix.upper() not in expressions.UNIT_MILLIS
        }

        # EXPLAIN is a Splice statement, not an opaque command.
        KEYWORDS: t.ClassVar[dict[str, TokenType]] = {
            key: token_type
            for key, token_type in Spark.Tokenizer.KEYWORDS.items()
            if key != "EXPLAIN"
        }

    Parser = SpliceParser

    Generator = SpliceGenerator


def parse_duration(text: str) -> expressions.Duration:
    """The duration written in ``text`` (``'1 HOUR'``, ``'500ms'``,
    ``INTERVAL '1' MINUTE``), e.g. a SET value. Raises sqlglot's ParseError
    (or TokenError) when ``text`` is not exactly one duration."""
    dialect = Splice()
    parser = dialect.parser(error_level=ErrorLevel.IMMEDIATE)
    parsed = parser.parse_into(expressions.Duration, dialect.tokenize(text), text)
    return t.cast(expressions.Duration, parsed[0])
