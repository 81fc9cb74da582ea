"""Lenses' topic declaration, ``CREATE TABLE name (_key TYPE | _key.f TYPE,
..., value columns) FORMAT (key format, value format) [PROPERTIES (...)]``,
made a Kafka source.

In Lenses a "table" of this statement is a topic with its storage formats;
statements then read it by name, as a stream (``SELECT STREAM``) or as a
table (``SELECT TABLE``). So the source is a stream of the topic's records:
``_key`` is the record key (the ``_key`` facet: ``_key TYPE`` for a primitive
key, ``_key.f TYPE`` for the fields of a JSON key object), the other columns
are the value's fields (the ``_value`` facet), ``ROWTIME`` is the record's
timestamp. A record with a null value stays in the stream as a row without
a value, which ``SELECT TABLE`` reads as the tombstone of its key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from splice.sql import expressions
from splice.sql.errors import Position, SqlError
from splice.sql.types import spark_type, struct_type
from sqlglot import exp

# Lenses' key storage formats Splice reads, as the Kafka source's key formats.
KEY_FORMATS = {"STRING": "kafka", "JSON": "json"}
PROPERTIES = {"partitions", "replication", "compacted"}
FIX_FORMAT = ("write FORMAT (STRING, JSON) for a text key, or FORMAT (JSON, JSON) for a "
              "JSON key; values are read as JSON objects, or as AVRO through the schema "
              "registry")


@dataclass
class TopicDeclaration:
    """What the statement declares, in the terms of a Kafka source."""

    values: list[exp.ColumnDef]  # the value facet's columns
    key_type: str  # the type of ``_key``
    options: dict[str, str]  # the Kafka source's normalized options


def topic_declaration(node: expressions.CreateSource, name: str,
                      where: Callable[[exp.Expression | None], Position]) -> TopicDeclaration:
    """The declaration's columns, key type and source options; a format,
    property or key Splice cannot read is a positioned error at it."""
    context = f"CREATE TABLE {name} (...) FORMAT (...)"
    if node.args["kind"].upper() != "TABLE":
        raise SqlError(where(node), f"FORMAT (key, value) declares a Lenses topic: write "
                       f"CREATE TABLE {name} (...) FORMAT (...)",
                       "write CREATE TABLE, as Lenses does (the topic is read as a stream "
                       "by SELECT STREAM and as a table by SELECT TABLE)")
    for clause in ("options", "watermark", "primary_key"):
        part = node.args.get(clause)
        if part:
            first = part[0] if isinstance(part, list) else part
            raise SqlError(where(first), f"{context} takes its options in PROPERTIES (...) and "
                           "its key as _key columns",
                           "drop the WITH (...), WATERMARK or PRIMARY KEY: declare the key as "
                           "_key TYPE (or _key.field TYPE); ROWTIME is the record's timestamp")
    key_word, value_word = node.args["topic_format"].expressions
    if value_word.name not in ("JSON", "AVRO"):
        raise SqlError(where(value_word), f"value format '{value_word.name}' is not supported",
                       FIX_FORMAT)
    if key_word.name not in KEY_FORMATS:
        raise SqlError(where(key_word), f"key format '{key_word.name}' is not supported",
                       FIX_FORMAT)
    whole = [c for c in node.expressions if c.name.lower() == "_key"]
    fields = [c for c in node.expressions if c.name.lower().startswith("_key.")]
    values = [c for c in node.expressions if c not in whole and c not in fields]
    if whole and fields:
        raise SqlError(where(fields[0]), f"{context} declares its key both whole (_key) and by "
                       "field (_key.field)", "keep one: _key TYPE for a primitive key, or "
                       "_key.field TYPE for each field of a JSON key")
    if len(whole) > 1:
        raise SqlError(where(whole[1]), f"{context} declares _key twice", "declare it once")
    if fields and key_word.name != "JSON":
        raise SqlError(where(key_word), f"the key fields ({fields[0].name}, ...) need a JSON "
                       f"key, not {key_word.name}", "write FORMAT (JSON, JSON)")
    if not values and value_word.name != "AVRO":  # Avro's come from the registry
        raise SqlError(where(node), f"{context} declares no value column",
                       "declare the fields of the topic's JSON values")
    if whole:
        key_type = spark_type(whole[0].args["kind"])
    elif fields:
        key_type = struct_type([(c.name[len("_key."):], spark_type(c.args["kind"]))
                                for c in fields])
    else:
        key_type = "string"
    # Lenses creates the topic it declares: Splice does when it is missing.
    options = {"topic": name, "key_format": KEY_FORMATS[key_word.name], "partitions": "1",
               "null_values": "tombstone"}
    if value_word.name == "AVRO":
        options["value_format"] = "avro"
    for prop in node.args.get("properties") or []:
        options.update(_property(prop, context, where))
    return TopicDeclaration(values=values, key_type=key_type, options=options)


def _property(prop: exp.Property, context: str,
              where: Callable[[exp.Expression | None], Position]) -> dict[str, str]:
    key = prop.name.lower()
    value = prop.args["value"].name
    at = where(prop.args["value"])
    if key not in PROPERTIES:
        raise SqlError(where(prop), f"property '{prop.name}' of {context} is not supported",
                       f"use {', '.join(sorted(PROPERTIES))} (they apply when Splice creates "
                       "the topic)")
    if key == "compacted":
        if value.lower() not in {"true", "false"}:
            raise SqlError(at, f"compacted must be true or false, not '{value}'",
                           "write compacted=true")
        return {"compacted": value.lower()}
    if not value.isdigit() or int(value) < 1:
        raise SqlError(at, f"{key} must be a whole number above 0, not '{value}'",
                       f"write {key}=1 (or more)")
    return {key: value}
