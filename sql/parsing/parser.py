"""The Splice parser: Spark's, with every Splice mixin (see :mod:`splice.sql.parsing`)."""

from __future__ import annotations

from splice.sql.parsing.joins import JoinParser
from splice.sql.parsing.selects import SelectParser
from splice.sql.parsing.statements import StatementParser


class SpliceParser(StatementParser, SelectParser, JoinParser):
    """Spark SQL with the streaming-join statements and clauses of Splice.

    Expressions stay standard sqlglot nodes; what the streaming dialects add
    is parsed into the nodes of :mod:`splice.sql.expressions` or into extra arguments of
    standard nodes, as that module's docstring describes.
    """
