"""The analyzer, one module per concern.

:class:`sql.analyzer.Analyzer` is composed of one mixin per concern, each a
subclass of :class:`sql.analysis.base.AnalyzerBase` (the pipeline's steps and
names so far, and the statement being analyzed):

- :mod:`sql.analysis.statements`: the driver, statement by statement, and SET;
- :mod:`sql.analysis.sources`: ``CREATE STREAM|TABLE|SOURCE (...) WITH (...)``;
- :mod:`sql.analysis.queries`: a query's inputs, single-input queries,
  GROUP BY, tables read from streams;
- :mod:`sql.analysis.windows`: ``TUMBLE`` / ``HOP`` inputs;
- :mod:`sql.analysis.joins`: join chains and each join stage;
- :mod:`sql.analysis.join_rules`: a join's condition, the checks of its
  kinds and equalities, where its WHERE runs, its key;
- :mod:`sql.analysis.repartition`: re-keying a stream input by the join
  expressions.

The rules that need no analyzer state live in the flat modules of ``sql/``
(:mod:`sql.scope`, :mod:`sql.conditions`, :mod:`sql.projection`,
:mod:`sql.aggregate`, :mod:`sql.windows`, :mod:`sql.asof`, ...).
"""
