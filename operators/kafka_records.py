"""A Kafka sink's records: an output row's key and value as the bytes (or
text) a record carries, in the sink's key and value formats
(operators/kafka_sink.py writes them)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from splice.engine.io import KEY
from splice.sql.plan import Step


def record_key(upstream: Step, key_format: str) -> Column:
    """``_key`` as the record's key text."""
    key = F.col(f"`{KEY}`")
    if upstream.relation.key_type.startswith("struct"):
        return F.to_json(key)
    if key_format == "json":
        # A primitive's JSON: the element of a one-element JSON array.
        return F.regexp_extract(F.to_json(F.array(key)), r"^\[(.*)\]$", 1)
    return key.cast("string")


def record_value(upstream: Step) -> Column:
    """The value columns as one JSON object, NULL fields written."""
    columns = [F.col(f"`{c.name}`") for c in upstream.relation.columns]
    return F.to_json(F.struct(*columns), {"ignoreNullFields": "false"})
