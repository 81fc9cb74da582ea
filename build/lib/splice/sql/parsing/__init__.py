"""The Splice parser, one module per concern.

:class:`sql.parsing.parser.SpliceParser` is Spark's sqlglot parser extended by
a mixin per concern, each a subclass of :class:`sql.parsing.base.ParserBase`
(Splice-worded errors):

- :mod:`sql.parsing.lexical`: token predicates, names (dotted, hyphenated),
  plain option values;
- :mod:`sql.parsing.durations`: ``5s``, ``5 SECONDS``, ``INTERVAL '5' SECOND``;
- :mod:`sql.parsing.windows`: ``OVER (...)`` on a stream, ``TUMBLE`` / ``HOP``;
- :mod:`sql.parsing.joins`: FROM tables and joins with their windows;
- :mod:`sql.parsing.selects`: ``SELECT STREAM|TABLE`` and projection targets;
- :mod:`sql.parsing.sources`: the body of ``CREATE STREAM|TABLE|SOURCE (...)``;
- :mod:`sql.parsing.statements`: the pipeline statements.

Mixins use sqlglot's parser extension surface (``self._curr``,
``self._match*``, ``self._parse_*``), as sqlglot's own dialects do.
"""
