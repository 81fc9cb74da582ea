"""The Splice parser, one module per concern.

:class:`splice.sql.parsing.parser.SpliceParser` is Spark's sqlglot parser extended by
a mixin per concern, each a subclass of :class:`splice.sql.parsing.base.ParserBase`
(Splice-worded errors):

- :mod:`splice.sql.parsing.lexical`: token predicates, names (dotted, hyphenated),
  plain option values;
- :mod:`splice.sql.parsing.durations`: ``5s``, ``5 SECONDS``, ``INTERVAL '5' SECOND``;
- :mod:`splice.sql.parsing.windows`: ``OVER (...)`` on a stream, ``TUMBLE`` / ``HOP``;
- :mod:`splice.sql.parsing.joins`: FROM tables and joins with their windows;
- :mod:`splice.sql.parsing.selects`: ``SELECT STREAM|TABLE`` and projection targets;
- :mod:`splice.sql.parsing.sources`: the body of ``CREATE STREAM|TABLE|SOURCE (...)``;
- :mod:`splice.sql.parsing.statements`: the pipeline statements.

Mixins use sqlglot's parser extension surface (``self._curr``,
``self._match*``, ``self._parse_*``), as sqlglot's own dialects do.
"""
