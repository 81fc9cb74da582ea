"""The analyzer, one module per concern.

:class:`splice.sql.analyzer.Analyzer` is composed of one mixin per concern, each a
subclass of :class:`splice.sql.analysis.base.AnalyzerBase` (the pipeline's steps and
names so far, and the statement being analyzed):

- :mod:`splice.sql.analysis.statements`: the driver, statement by statement, and SET;
- :mod:`splice.sql.analysis.sources`: ``CREATE STREAM|TABLE|SOURCE (...) WITH (...)``;
- :mod:`splice.sql.analysis.queries`: a query's inputs, single-input queries,
  GROUP BY, tables read from streams;
- :mod:`splice.sql.analysis.windows`: ``TUMBLE`` / ``HOP`` inputs;
- :mod:`splice.sql.analysis.joins`: join chains and each join stage;
- :mod:`splice.sql.analysis.join_rules`: a join's condition, the checks of its
  kinds and equalities, where its WHERE runs, its key;
- :mod:`splice.sql.analysis.repartition`: re-keying a stream input by the join
  expressions.

The rules that need no analyzer state live in the flat modules of ``sql/``
(:mod:`splice.sql.scope`, :mod:`splice.sql.conditions`, :mod:`splice.sql.projection`,
:mod:`splice.sql.aggregate`, :mod:`splice.sql.windows`, :mod:`splice.sql.where_parts`,
:mod:`splice.sql.asof`, ...).
"""
