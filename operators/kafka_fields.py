"""A Kafka record's JSON value matched to the declared columns by name
without regard to case, as every name in Splice's SQL is (LANGUAGE.md) and
as ksqlDB reads a topic: ksqlDB writes the value of a column declared
``name VARCHAR`` as ``{"NAME": ...}`` (unquoted names are upper case) and
reads either spelling. Spark's ``from_json`` matches field names exactly,
so a topic written by ksqlDB read every such column as NULL: a row of
NULLs, a tombstone on a table, a missing event time in the dead letter.

A field of the exact name still wins; only a column that the value does not
hold under its exact name is looked up again among the value's fields
spelt otherwise (the first such field, in the value's order). That second
look parses the value as a map, and only for the records that need it (a
CASE branch), so a topic whose names match costs nothing more; and only
for a value that is one JSON object (its verdict), since a value with a
key twice would stop the map's parse.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from splice.operators.json_source import WHOLE
from splice.sql.plan import SourceStep


def any_case_fields(step: SourceStep, text: Column, value: Column, verdict: Column) -> Column:
    """``text`` (``splice.operators.json_source.text_fields`` of ``value``: each
    declared column's field as text, and ``__corrupt``) with every column
    the value lacks under its exact name taken from a field of the same
    name spelt in another case. ``verdict``: the value's object verdict."""
    fields = F.from_json(value, "map<string,string>")
    columns = []
    for c in step.declared:
        exact = text.getField(c.name)
        other = F.try_element_at(F.map_values(F.map_filter(fields, _named(c.name))), F.lit(1))
        columns.append(F.when(exact.isNull() & (verdict == F.lit(WHOLE)), other)
                       .otherwise(exact).alias(c.name))
    return F.when(text.isNull(), text).otherwise(
        F.struct(*columns, text.getField("__corrupt").alias("__corrupt")))


def _named(name: str) -> Callable[[Column, Column], Column]:
    """A map entry's test: its key is ``name`` in any case."""
    lower = name.lower()
    return lambda key, _value: F.lower(key) == F.lit(lower)
