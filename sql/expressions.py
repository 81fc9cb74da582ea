"""The syntax tree nodes Splice adds to sqlglot's.

The Splice dialect (``splice.sql.dialect``) parses a pipeline into sqlglot
expressions. Standard SQL stays standard (``exp.Select``, ``exp.Join``,
``exp.Column`` ...); what the four streaming dialects add is one of the
nodes below, or an extra argument on a standard node:

``exp.Select``
    ``result_kind``: ``"STREAM"``, ``"TABLE"`` or absent (``SELECT STREAM``,
    ``SELECT TABLE``, plain ``SELECT``).
``exp.Join``
    ``side`` ``"FULL"`` for Lenses' bare ``OUTER JOIN``; ``kind`` ``"CROSS"``
    for ``CROSS JOIN`` and for a comma in FROM; ``method`` ``"NATURAL"`` or
    ``"ASOF"``; plus ``within`` (a :class:`Within`) and ``grace`` (a
    :class:`Duration`), whether written before ON (ksqlDB) or after it
    (Lenses).
``exp.Table``
    ``stream_window`` (a :class:`StreamWindow`, s-Server's ``OVER (...)``)
    and ``proctime`` (``True`` for ``FOR SYSTEM_TIME AS OF PROCTIME()``).
    A name with hyphens or dots is kept whole in ``this`` (see
    :func:`table_name`).

Every statement node and every ``exp.Join`` carries ``meta["offset"]``: the
character offset of its first token in the file, from which errors compute
line and column (``splice.sql.errors.position_in``).
"""

from __future__ import annotations

from sqlglot import exp

# Milliseconds per unit, for every spelling the four dialects use.
UNIT_MILLIS: dict[str, int] = {
    "MS": 1,
    "MILLISECOND": 1,
    "MILLISECONDS": 1,
    "S": 1000,
    "SEC": 1000,
    "SECS": 1000,
    "SECOND": 1000,
    "SECONDS": 1000,
    "M": 60_000,
    "MIN": 60_000,
    "MINS": 60_000,
    "MINUTE": 60_000,
    "MINUTES": 60_000,
    "H": 3_600_000,
    "HOUR": 3_600_000,
    "HOURS": 3_600_000,
    "D": 86_400_000,
    "DAY": 86_400_000,
    "DAYS": 86_400_000,
}


class Duration(exp.Expression):
    """A length of time: ``5s``, ``1 HOUR``, ``2 HOURS``, ``INTERVAL '1' MINUTE``.

    ``this`` is the amount as written (a number literal), ``unit`` the
    canonical unit name (``SECOND``, ``MINUTE`` ...), ``millis`` the length.
    """

    arg_types = {"this": True, "unit": True, "millis": True}

    @property
    def millis(self) -> int:
        return int(self.args["millis"])


class Within(exp.Expression):
    """A stream-stream join window: ``WITHIN d`` or ``WITHIN (before, after)``.

    ``this`` is the ``before`` :class:`Duration`; ``expression`` the ``after``
    one, absent for the symmetric ``WITHIN d``.
    """

    arg_types = {"this": True, "expression": False}


class StreamWindow(exp.Expression):
    """s-Server's per-stream join window, ``OVER (RANGE ... | ROWS ...)``.

    ``kind`` is ``"RANGE"`` or ``"ROWS"``; ``this`` is the width: a
    :class:`Duration` for RANGE (``None`` for ``RANGE CURRENT ROW``), a number
    literal for ``ROWS n PRECEDING``.
    """

    arg_types = {"this": False, "kind": True}


class WindowTable(exp.Expression):
    """RisingWave's time window functions in FROM: ``TUMBLE(s, ts, size)``,
    ``HOP(s, ts, slide, size)``.

    ``kind`` is ``"TUMBLE"`` or ``"HOP"``; ``this`` the source ``exp.Table``;
    ``column`` the time column; ``size`` and ``slide`` :class:`Duration` nodes;
    ``alias`` an optional ``exp.TableAlias``.
    """

    arg_types = {"this": True, "kind": True, "column": True, "size": True, "slide": False,
                 "alias": False}


class PathAlias(exp.Expression):
    """A projection onto a nested or facet target: ``expr AS x.a``,
    ``expr AS _key.a``. ``this`` is the expression, ``path`` the list of
    ``exp.Identifier`` parts (at least two)."""

    arg_types = {"this": True, "path": True}

    @property
    def parts(self) -> list[str]:
        return [p.name for p in self.args["path"]]


class Watermark(exp.Expression):
    """``WATERMARK FOR ts AS ts - INTERVAL '20' SECOND`` in a source's columns.

    ``this`` is the column identifier, ``expression`` the watermark expression.
    """

    arg_types = {"this": True, "expression": True}


class CreateSource(exp.Expression):
    """``CREATE STREAM|TABLE|SOURCE name (columns) WITH (options)``.

    ``kind`` is ``"STREAM"``, ``"TABLE"`` or ``"SOURCE"``; ``this`` the name
    identifier; ``expressions`` the ``exp.ColumnDef`` list (empty when the
    schema registry gives the columns: ksqlDB's ``VALUE_FORMAT='AVRO'``); ``watermark`` an
    optional :class:`Watermark`; ``options`` a list of ``exp.Property`` whose
    ``this`` is the option name and ``value`` a literal; ``primary_key`` a
    table-level ``exp.PrimaryKey`` (RisingWave); ``row_format`` and
    ``row_encode`` the ``exp.Var`` words of RisingWave's ``FORMAT PLAIN
    ENCODE JSON``, and ``encode_options`` the ``(schema.registry = ...)``
    after ENCODE AVRO (``exp.Property`` list); ``topic_format`` the
    ``exp.Tuple`` of the two ``exp.Var`` words of Lenses' ``FORMAT (key format, value format)``, and
    ``properties`` its ``PROPERTIES (...)`` (``exp.Property`` list).
    """

    arg_types = {"this": True, "kind": True, "expressions": False, "watermark": False,
                 "options": False, "primary_key": False, "row_format": False,
                 "row_encode": False, "topic_format": False, "properties": False,
                 "encode_options": False}


class CreateAs(exp.Expression):
    """``CREATE STREAM|TABLE name AS SELECT ... [EMIT CHANGES]`` (ksqlDB) and
    ``CREATE MATERIALIZED VIEW name AS SELECT ...`` (RisingWave).

    ``kind`` is ``"STREAM"``, ``"TABLE"`` or ``"MATERIALIZED VIEW"``; ``this``
    the name identifier; ``expression`` the query; ``emit_changes`` a bool;
    ``options`` the ``WITH (...)`` of an output also written to a Kafka topic
    (ksqlDB's ``CREATE STREAM name WITH (kafka_topic=...) AS SELECT``).
    """

    arg_types = {"this": True, "kind": True, "expression": True, "emit_changes": False,
                 "options": False}


class InsertInto(exp.Expression):
    """``INSERT INTO target SELECT ...`` (Lenses): an output named ``this``."""

    arg_types = {"this": True, "expression": True}


class WithStep(exp.Expression):
    """``WITH name AS (SELECT ...);`` standing alone (Lenses): a named step."""

    arg_types = {"this": True, "expression": True}


class SetOption(exp.Expression):
    """``SET name = value;``: ``this`` is the dotted name as a string,
    ``expression`` the value literal."""

    arg_types = {"this": True, "expression": True}


class Explain(exp.Expression):
    """``EXPLAIN <statement>``: ``this`` is the statement explained."""

    arg_types = {"this": True}


STATEMENT_TYPES = (CreateSource, CreateAs, InsertInto, WithStep, SetOption, Explain)


def table_name(table: exp.Table) -> str:
    """The whole name of a table reference: ``input-topic``,
    ``stocks.order_quantity`` (catalog, db and name joined by dots)."""
    return ".".join(part.name for part in table.parts)
