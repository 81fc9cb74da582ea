"""A Kafka sink's records: an output row's key and value as the bytes (or
text) a record carries, in the sink's key and value formats
(operators/kafka_sink.py writes them).

JSON (the default): the value columns as one JSON object, nulls written.
AVRO and JSON_SR: the schema registry's wire format, a magic byte 0 and the
schema's id (4 bytes, big endian) before the Avro binary encoding of the
value columns (spark-avro's ``to_avro``) or the JSON object's UTF-8 bytes;
the schema is derived from the output's columns (operators/sink_schemas.py)
and registered under the topic's subject once, when the query is built
(operators/sink_registry.py). The encoding is Spark's own, inside the JVM:
no Python runs per record. An AVRO key is encoded so under ``<topic>-key``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from splice.engine.io import KEY, StepIO
from splice.engine.registry_schemas import RegistrySchemas
from splice.operators.sink_registry import Registration, SinkSchema, register
from splice.operators.sink_schemas import VALUE_RECORD, avro_key, avro_record, json_schema
from splice.sql.analysis.kafka import REGISTRY_URL
from splice.sql.plan import SinkStep, Step


@dataclass(frozen=True)
class Records:
    """How a sink's rows become records: the key's and the value's columns,
    and their Spark types (the sink's own table keeps what it sent)."""

    key: Column
    value: Column
    key_type: str = "string"
    value_type: str = "string"


def records(step: SinkStep, upstream: Step, schema: StructType, io: StepIO) -> Records:
    """The records of ``step`` in its formats; ``schema``: the rows' (the
    upstream stream's) Spark schema. The registry formats register their
    schemas here."""
    options = step.options
    key_format, value_format = options.get("key_format", "kafka"), options.get("value_format",
                                                                                "json")
    values = StructType([schema[c.name] for c in upstream.relation.columns])
    key, key_type = record_key(upstream, key_format), "string"
    if key_format == "avro":
        found = _register(step, io, SinkSchema(options["key_subject"], "AVRO",
                                               avro_key(schema[KEY].dataType)))
        key, key_type = _avro(F.col(f"`{KEY}`"), found, avro_key(schema[KEY].dataType)), "binary"
    if value_format == "json":
        return Records(key=key, value=record_value(upstream), key_type=key_type)
    subject = options["value_subject"]
    if value_format == "avro":
        avro = avro_record(values, options.get("value_avro_schema_full_name", VALUE_RECORD))
        found = _register(step, io, SinkSchema(subject, "AVRO", avro))
        return Records(key=key, value=_avro(_value_struct(upstream), found, avro),
                       key_type=key_type, value_type="binary")
    found = _register(step, io, SinkSchema(subject, "JSON", json_schema(values, step.topic)))
    text = record_value(upstream)
    return Records(key=key, value=F.concat(_header(found), F.encode(text, "UTF-8")),
                   key_type=key_type, value_type="binary")


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
    return F.to_json(_value_struct(upstream), {"ignoreNullFields": "false"})


def _value_struct(upstream: Step) -> Column:
    return F.struct(*[F.col(f"`{c.name}`") for c in upstream.relation.columns])


def _register(step: SinkStep, io: StepIO, wanted: SinkSchema) -> Registration:
    lookup = RegistrySchemas(conf=io.schema_registry)
    if step.options.get(REGISTRY_URL):  # the statement's own registry
        lookup = lookup.at(step.options[REGISTRY_URL])
    return register(lookup, wanted, step.inputs[0])


def _header(found: Registration) -> Column:
    """The wire format's 5 bytes: magic 0, the schema id big endian."""
    return F.lit(bytearray(b"\x00" + found.schema_id.to_bytes(4, "big")))


def _avro(column: Column, found: Registration, schema: object) -> Column:
    """``column`` in the wire format, Avro-encoded (NULL stays NULL: a
    record without a key)."""
    import json

    from pyspark.sql.avro.functions import to_avro

    encoded = F.concat(_header(found), to_avro(column, json.dumps(schema)))
    return F.when(column.isNull(), F.lit(None).cast("binary")).otherwise(encoded)
