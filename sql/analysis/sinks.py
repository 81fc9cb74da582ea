"""``CREATE STREAM|TABLE name WITH (kafka_topic='...', ...) AS SELECT``
(ksqlDB; Splice's own ``format='kafka', topic='...'``): the output, as any
``CREATE ... AS``, and a sink step that writes it to the topic."""

from __future__ import annotations

from collections.abc import Callable

from splice.sql import expressions
from splice.sql.analysis.base import AnalyzerBase, name_of
from splice.sql.analysis.kafka import (
    KAFKA_OPTIONS,
    KEY_FORMATS,
    is_kafka,
    kafka_options,
    value_format_of,
)
from splice.sql.errors import Position, SqlError
from splice.sql.plan import ColumnSpec, Kind, Relation, SinkStep, Step
from splice.sql.value_schemas import value_subject
from sqlglot import exp

# What a sink's WITH (...) may hold besides properties.<name>: where the
# records go and how they are written.
# envelope: a source reads Debezium's change events; an output writes upsert records
SINK_OPTIONS = (KAFKA_OPTIONS - {"scan.startup.mode", "stored", "envelope"}) | {"format"}

# A sink's own rows: the records it sent (a tombstone's value is NULL); an
# Avro or JSON_SR value is the wire format's bytes.
SENT = (ColumnSpec(name="value", type="string"), ColumnSpec(name="batch_id", type="bigint"))

# The value formats written: JSON objects; Avro records and JSON objects in
# the schema registry's wire format, their schema registered under the
# topic's subject (operators/sink_registry.py).
SINK_VALUE_FORMATS = {"json", "avro", "json_sr"}
REFUSED_SINK_VALUE_FORMATS = {
    "protobuf": "Protobuf values are not written: Spark's spark-protobuf, which would encode "
                "them inside Spark, is not served here (docs/decisions/avro-sinks.md)",
    "protobuf_nosr": "Protobuf values are not written (spark-protobuf is not served here)",
    "avro_nosr": "Avro values without a schema registry are not written: a consumer's "
                 "deserializer needs the registry's schema id",
    "delimited": "DELIMITED values are not written",
    "kafka": "a value in the KAFKA format (one primitive) is not written",
    "none": "an output topic's records carry the value columns",
}
# The key formats written: a sink adds AVRO (a primitive key as an Avro
# primitive, a key of several columns as a record).
SINK_KEY_FORMATS = KEY_FORMATS | {"avro"}


class SinkAnalyzer(AnalyzerBase):
    """Outputs written to a Kafka topic."""

    def _sink(self, node: expressions.CreateAs, kind: Kind, output: Step | None) -> None:
        """The sink step of ``output`` (of ``kind``). With no output (its query
        reads a name whose statement was rejected, and was skipped), the
        options are checked all the same and no step is added: they are this
        statement's own, and their errors are reported with the earlier one."""
        name = name_of(node.this)
        props = node.args.get("options") or []
        options = {p.name.lower(): _value(p) for p in props}

        def pos(key: str) -> Position:
            prop = [p for p in props if p.name.lower() == key][-1]
            return self.stmt.pos(prop.args.get("value") or prop)

        if not is_kafka(options) and "topic" not in options:
            raise SqlError(self.stmt.pos(props[0] if props else node),
                           f"the WITH (...) of output '{name}' names no Kafka topic",
                           f"write CREATE {node.args['kind'].upper()} {name} WITH "
                           f"(kafka_topic='{name}', value_format='JSON') AS SELECT ..., or "
                           "drop the WITH (...) for an output in the warehouse only")
        for key in options:
            if key not in SINK_OPTIONS and not key.startswith("properties."):
                raise SqlError(pos(key), f"option '{key}' is not one of an output topic's",
                               f"use {', '.join(sorted(SINK_OPTIONS))} or properties.<name>")
        _check_formats(options, pos)
        normalized = kafka_options(node, {"format": "kafka", **options}, name,
                                   kind == Kind.TABLE, pos, self.stmt.pos, SINK_KEY_FORMATS)
        if normalized.get("value_format", "json") != "json":
            normalized["value_subject"] = value_subject(normalized["topic"])
        if normalized["key_format"] == "avro":
            normalized["key_subject"] = f"{normalized['topic']}-key"
        if output is None:
            return
        sent = SENT
        if normalized.get("value_format", "json") != "json":  # the wire format's bytes
            sent = (ColumnSpec(name="value", type="binary"), *SENT[1:])
        self._add(SinkStep(
            id=self._fresh_id(f"{name}_topic"), inputs=(output.id,), where=self.stmt.where,
            sql=self.stmt.parsed.text, topic=normalized["topic"], options=normalized,
            relation=Relation(kind=Kind.STREAM, columns=sent, key_type="binary"
                              if normalized["key_format"] == "avro" else "string")))


def _check_formats(options: dict[str, str], pos: Callable[[str], Position]) -> None:
    """The value and key formats an output topic is written in: a format
    Splice does not write is a positioned error that says why."""
    written = value_format_of(options)
    fmt_option = "value_format" if "value_format" in options else "format"
    if written not in SINK_VALUE_FORMATS:
        why = REFUSED_SINK_VALUE_FORMATS.get(written, "it is not a format Splice writes")
        raise SqlError(pos(fmt_option), f"value format '{written.upper()}' is not supported "
                       f"for an output topic: {why}",
                       "write VALUE_FORMAT='AVRO', 'JSON_SR' (through the schema registry) "
                       "or 'JSON'")
    if "value_schema_id" in options:
        raise SqlError(pos("value_schema_id"), "VALUE_SCHEMA_ID is not taken by an output "
                       "topic: its schema is derived from the output's columns and "
                       "registered under the topic's subject",
                       "drop VALUE_SCHEMA_ID; a changed schema is registered as a new "
                       "version when compatible")
    key_format = options.get("key_format")
    key_option = "key_format"
    if "kafka_topic" in options and options.get("format", "kafka").lower() != "kafka":
        key_format, key_option = options["format"], "format"  # FORMAT: key and value
    if key_format is not None and key_format.lower() not in SINK_KEY_FORMATS | {"none"}:
        raise SqlError(pos(key_option), f"key format '{key_format.upper()}' is not supported "
                       "for an output topic: Splice writes keys as KAFKA text, JSON or AVRO",
                       "write KEY_FORMAT='KAFKA', 'JSON' or 'AVRO'" + (
                           f" with VALUE_FORMAT='{key_format.upper()}' instead of FORMAT"
                           if key_option == "format" else ""))


def _value(prop: exp.Property) -> str:
    value = prop.args.get("value")
    return value.name if isinstance(value, exp.Expression) else str(value)
