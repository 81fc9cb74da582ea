"""From parsed statements to the logical plan.

The analyzer walks a pipeline's statements in order. Sources declare
relations; ``SET`` changes settings for the statements after it; every query
statement (``WITH``, ``INSERT INTO``, ``CREATE ... AS``) becomes one or more
steps: a projection, a table materialization, a repartition, a join per
stage of a chain. Every rule of the language that can be checked without
data is checked here, and a broken rule is a positioned :class:`SqlError`.

:class:`Analyzer` is composed of one part per concern, in :mod:`splice.sql.analysis`.
"""

from __future__ import annotations

from splice.sql.analysis.joins import JoinAnalyzer
from splice.sql.analysis.queries import QueryAnalyzer
from splice.sql.analysis.sinks import SinkAnalyzer
from splice.sql.analysis.sources import SourceAnalyzer
from splice.sql.analysis.statements import StatementAnalyzer
from splice.sql.intervals import interval_ms, parse_duration_ms
from splice.sql.types import UNKNOWN


class Analyzer(StatementAnalyzer, SourceAnalyzer, SinkAnalyzer, QueryAnalyzer, JoinAnalyzer):
    """Analyzes the statements of one pipeline, in order: :meth:`add` them,
    then :meth:`finish` gives the :class:`splice.sql.plan.Pipeline`."""


__all__ = ["UNKNOWN", "Analyzer", "interval_ms", "parse_duration_ms"]
