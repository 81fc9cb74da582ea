"""A Kafka source's value schema from the schema registry, at compile time:
the columns of ``VALUE_FORMAT='AVRO'`` checked against it, or inferred
from it when the statement declares only its key (as ksqlDB does).

The front end asks through :class:`SchemaLookup` (the registry client is
the runtime's, ``splice.engine.schema_registry.RegistrySchemas``), so that
nothing here does I/O itself. The subject is the topic's, as ksqlDB's
default TopicNameStrategy names it: ``<topic>-value``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from splice.sql.avro_types import castable, record_fields
from splice.sql.errors import Position, SqlError
from splice.sql.plan import ColumnSpec

# The option holding the schema id the columns were resolved from at compile
# time: what the compile found, not what the step computes, so the step's
# definition leaves it out (engine/definitions.py) and a version registered
# since the last run asks for no rebuild unless the columns change.
RESOLVED = "value_schema_resolved"


class LookupFailed(Exception):
    """The registry did not give the schema: not set, unreachable, no such
    subject or id; the message says which, ``fix`` what to do."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix or ("register the topic's value schema under that subject (its "
                           "producer's serializer does), or fix the registry setting")


@dataclass(frozen=True)
class Registered:
    """One registered schema."""

    schema_id: int
    schema_type: str  # AVRO, PROTOBUF, JSON
    text: str


class SchemaLookup(Protocol):
    def latest(self, subject: str) -> Registered: ...

    def by_id(self, schema_id: int) -> Registered: ...

    def at(self, url: str) -> SchemaLookup:
        """The same lookup at another registry (a statement's own URL)."""
        ...


def value_subject(topic: str) -> str:
    return f"{topic}-value"


def avro_columns(lookup: SchemaLookup | None, topic: str, schema_id: str | None,
                 columns: list[ColumnSpec], keys: list[str], at: Position,
                 id_at: Position | None) -> tuple[list[ColumnSpec], Registered]:
    """The source's columns: the declared value columns checked against the
    registry's schema, or (none declared) the key columns declared followed
    by the schema's fields; and the schema they came from. ``at`` is the
    statement's position, ``id_at`` VALUE_SCHEMA_ID's."""
    subject = value_subject(topic)
    if lookup is None:
        raise SqlError(at, f"VALUE_FORMAT='AVRO' reads subject '{subject}' from the schema "
                       "registry, and none is set",
                       "set SPLICE_SCHEMA_REGISTRY_URL (or schema_registry_url in "
                       "splice.yaml); bash scripts/registry.sh start starts one")
    try:
        found = lookup.by_id(int(schema_id)) if schema_id else lookup.latest(subject)
    except LookupFailed as err:
        raise SqlError(id_at if schema_id and id_at else at,
                       f"VALUE_FORMAT='AVRO' reads subject '{subject}' from the schema "
                       f"registry: {err}", err.fix) from None
    origin = f"subject '{subject}' (schema id {found.schema_id})"
    if found.schema_type.upper() != "AVRO":
        raise SqlError(id_at or at, f"{origin} is a {found.schema_type} schema, not Avro",
                       f"write VALUE_FORMAT='{_format_of(found.schema_type)}', or give the "
                       "id of an Avro schema")
    fields = record_fields(found.text)
    by_name = {f.name.lower(): f for f in fields}
    lowered_keys = {k.lower() for k in keys}
    values = [c for c in columns if c.name.lower() not in lowered_keys]
    if not values:  # inferred, after the declared key columns
        out = list(columns)
        declared = {c.name.lower() for c in columns}
        for f in fields:
            if f.name.lower() in declared:  # (a key of PRIMARY KEY (id) alone is a field)
                continue
            if f.problem:
                raise SqlError(at, f"field {f.problem} in {origin}",
                               "declare the columns to read (leaving that field out), or "
                               "change the schema")
            out.append(ColumnSpec(name=f.name, type=f.type, nullable=f.nullable))
        return out, found
    for c in values:
        field = by_name.get(c.name.lower())
        if field is None:
            raise SqlError(at, f"column '{c.name}' is not a field of {origin}; its fields "
                           f"are {', '.join(f.name for f in fields)}",
                           "declare only fields of the schema, or register the version that "
                           "adds it")
        if field.problem:
            raise SqlError(at, f"column '{c.name}': field {field.problem} in {origin}",
                           "leave the column out, or change the schema")
        if not castable(field.type, c.type):
            raise SqlError(at, f"column '{c.name}' is {c.type.upper()}, but field "
                           f"'{field.name}' of {origin} is {field.type.upper()}",
                           f"declare it {field.type.upper()}, or leave the column list out "
                           "to take the schema's types")
    return columns, found


def _format_of(schema_type: str) -> str:
    return {"PROTOBUF": "PROTOBUF", "JSON": "JSON_SR"}.get(schema_type.upper(), "AVRO")
