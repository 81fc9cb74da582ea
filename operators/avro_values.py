"""Avro values in the schema registry's wire format, decoded inside Spark.

A record's value is a magic byte 0, the writer's schema id (4 bytes, big
endian), then the Avro binary encoding of one record under that schema.
Decoding is spark-avro's ``from_avro`` (JVM code, no Python per record):
the header is cut off with Spark's own byte functions, and each writer
schema gets one ``from_avro`` branch chosen by the record's id, resolving
the writer's schema to the reader's (the option ``avroSchema``, with one
field added that tells a decoded record from one that did not decode:
:data:`DECODED`), so that a
record written with an older or newer compatible schema lands in the
statement's columns: a field the writer lacks takes the reader's default,
a field the reader lacks is dropped.

The reader's schema is VALUE_SCHEMA_ID's when the statement gives one, else
the version the columns were checked against or inferred from when the
pipeline was compiled (the subject's latest then). The writers are the
subject's versions (TopicNameStrategy, as ksqlDB), asked of the registry
once per micro-batch of the stored source (once per query start for a
topic read in place), each checked against the reader with Avro's own
reader/writer compatibility rules before any record is decoded. A record
goes to the dead letter, with its bytes in base64, when its header is not
the wire format's, its schema id is not a version of the subject, that
version cannot be resolved to the reader's schema (the checker's words),
its bytes do not decode, or a field does not convert to its column's type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro
from splice.engine.io import StepIO
from splice.engine.registry_schemas import RegistrySchemas
from splice.sql.analysis.kafka import REGISTRY_URL
from splice.sql.avro_types import record_fields
from splice.sql.plan import SourceStep
from splice.sql.value_schemas import RESOLVED, LookupFailed, Registered

NOT_FRAMED = ("not in the schema registry's wire format (a magic byte 0 and a 4-byte schema "
              "id before the value)")
_ALL = 2_147_483_647  # substring's "to the end"
# A field added to the reader's schema, which no writer has, so that every
# record read takes its default (true): from_avro's PERMISSIVE mode gives a
# record whose bytes do not decode as a row of nulls, this one included,
# where a record that decodes may well have every field of its own null.
DECODED = "__splice_decoded"


class RegistryUnavailable(Exception):
    """The registry did not give the subject's schemas: the run stops (no
    record is dead-lettered for the registry's own failure)."""


@dataclass(frozen=True)
class Writers:
    """The schemas a micro-batch's records may be written with."""

    subject: str
    reader: Registered
    usable: dict[int, Registered] = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)  # id -> why it cannot be read


def is_avro(step: SourceStep) -> bool:
    return step.options.get("value_format") == "avro"


def writers_of(step: SourceStep, io: StepIO) -> Writers:
    """The subject's versions now, and the reader's schema, from the
    registry io names; each version checked against the reader."""
    lookup = RegistrySchemas(conf=io.schema_registry)
    if step.options.get(REGISTRY_URL):  # the statement's own registry
        lookup = lookup.at(step.options[REGISTRY_URL])
    subject = step.options["value_subject"]
    try:
        versions = lookup.versions(subject)
        pinned = step.options.get("value_schema_id") or step.options.get(RESOLVED)
        reader = lookup.by_id(int(pinned)) if pinned else versions[-1]
    except LookupFailed as err:
        raise RegistryUnavailable(f"source '{step.name}' reads Avro values of subject "
                                  f"'{subject}': {err}; {err.fix}") from None
    usable: dict[int, Registered] = {}
    refused: dict[int, str] = {}
    for version in versions:
        why = incompatibility(reader, version)
        if why:
            refused[version.schema_id] = why
        else:
            usable[version.schema_id] = version
    return Writers(subject=subject, reader=reader, usable=usable, refused=refused)


def incompatibility(reader: Registered, writer: Registered) -> str:
    """Why records written with ``writer`` cannot be read with ``reader``
    (Avro's schema resolution rules); empty when they can."""
    if writer.schema_type.upper() != "AVRO":
        return f"schema id {writer.schema_id} is a {writer.schema_type} schema, not Avro"
    if writer.schema_id == reader.schema_id:
        return ""
    import avro.compatibility
    import avro.schema

    result = avro.compatibility.ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(reader.text), avro.schema.parse(writer.text))
    if result.compatibility == avro.compatibility.SchemaCompatibilityType.compatible:
        return ""
    words = "; ".join(sorted(f"{m}" for m in result.messages))
    return (f"schema id {writer.schema_id} cannot be read as schema id {reader.schema_id} "
            f"({words})")


def marked_reader(text: str) -> str:
    """The reader's schema with the :data:`DECODED` field."""
    schema = json.loads(text)
    schema["fields"] = [*schema.get("fields", []),
                        {"name": DECODED, "type": "boolean", "default": True}]
    return json.dumps(schema)


def header(raw: Column) -> tuple[Column, Column, Column]:
    """Whether ``raw`` is framed, its schema id, and the bytes after."""
    framed = (F.octet_length(raw) >= 5) & (F.hex(F.substring(raw, 1, 1)) == F.lit("00"))
    schema_id = F.conv(F.hex(F.substring(raw, 2, 4)), 16, 10).cast("bigint")
    return framed, schema_id, F.substring(raw, 6, _ALL)


def decoded_record(schema_id: Column, payload: Column, writers: Writers) -> Column:
    """The record as the reader's struct (its :data:`DECODED` field NULL
    when the bytes do not decode), chosen by the record's ``schema_id``
    among the writers' branches; NULL for an id of none of them."""
    options = {"mode": "PERMISSIVE", "avroSchema": marked_reader(writers.reader.text)}
    record: Column | None = None
    for schema_id_of, writer in writers.usable.items():
        branch = from_avro(payload, writer.text, options)
        record = (F.when(schema_id == schema_id_of, branch) if record is None
                  else record.when(schema_id == schema_id_of, branch))
    return F.lit(None) if record is None else record  # no version readable: see the reason


def header_reason(framed: Column, schema_id: Column, record: Column,
                  writers: Writers) -> Column:
    """Why a record goes to the dead letter before its fields are looked
    at (empty for one that decoded): ``record`` is :func:`decoded_record`'s,
    already computed (a column: from_avro runs once a record)."""
    refused = F.lit(None).cast("string")
    for schema_id_of, why in writers.refused.items():
        refused = F.when(schema_id == schema_id_of, F.lit(why)).otherwise(refused)
    known = F.lit(sorted(writers.usable) or [-1]).cast("array<bigint>")
    decoded = record.getField(DECODED) if writers.usable else F.lit(None)
    return (F.when(~framed, F.lit(NOT_FRAMED))
            .when(refused.isNotNull(), refused)
            .when(~F.array_contains(known, schema_id), F.concat(
                F.lit("schema id "), schema_id.cast("string"),
                F.lit(f" is not a version of subject '{writers.subject}'")))
            .when(decoded.isNull(), F.concat(
                F.lit("the bytes do not decode as Avro with schema id "),
                schema_id.cast("string")))
            .otherwise(F.lit("")))


def typed_columns(step: SourceStep, record: Column, writers: Writers) -> list[Column]:
    """Each declared column from the reader's field of its name (in any
    case), converted to its type; NULL where the reader has no such field."""
    fields = {f.name.lower(): f for f in record_fields(writers.reader.text)}
    out = []
    for c in step.declared:
        found = fields.get(c.name.lower())
        if found is None or found.problem:
            out.append(F.lit(None).cast(c.type))
            continue
        value = record.getField(found.name)
        out.append(_converted(value, found.type, c.type))
    return out


def _converted(value: Column, found: str, declared: str) -> Column:
    if found == declared:
        return value
    if found == "bigint" and declared == "timestamp":
        return F.timestamp_millis(value)
    return value.try_cast(declared)


def column_reasons(step: SourceStep, record: Column, writers: Writers) -> Column:
    """Why a decoded record's fields do not fill their columns."""
    fields = {f.name.lower(): f for f in record_fields(writers.reader.text)}
    reasons = []
    for i, c in enumerate(step.declared):
        found = fields.get(c.name.lower())
        typed = F.col(f"__t{i}")
        if found is not None and not found.problem and found.type != c.type:
            raw = record.getField(found.name)
            reasons.append(F.when(raw.isNotNull() & typed.isNull(), F.concat(
                F.lit(f"column '{c.name}': '"), raw.cast("string"),
                F.lit(f"' is not {c.type.upper()}"))))
        if c.name == step.timestamp_column:
            reasons.append(F.when(typed.isNull(), F.lit(f"missing event time '{c.name}'")))
    return F.concat_ws("; ", *reasons) if reasons else F.lit("")
