"""Avro schemas as Spark DDL column types, for a source whose values are
Avro records behind a schema registry (ksqlDB's ``VALUE_FORMAT='AVRO'``).

The mapping is the one spark-avro's ``from_avro`` reads into (so a column
typed here is what decoding gives) and the one ksqlDB infers: ``int`` INT,
``long`` BIGINT, ``float`` FLOAT, ``double`` DOUBLE, ``boolean`` BOOLEAN,
``string`` and ``enum`` STRING, ``bytes`` and ``fixed`` BINARY, the logical
types ``date`` DATE, ``timestamp-millis``/``-micros`` TIMESTAMP,
``local-timestamp-*`` TIMESTAMP_NTZ and ``decimal`` DECIMAL(p, s); a
record is a STRUCT, an array an ARRAY, a map a MAP with STRING keys; a
union of ``null`` and one type is that type, nullable. Any other union has
no column type: :class:`Unmapped` names where it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PRIMITIVES = {"int": "int", "long": "bigint", "float": "float", "double": "double",
              "boolean": "boolean", "string": "string", "bytes": "binary", "enum": "string",
              "fixed": "binary"}
LOGICAL = {"date": "date", "timestamp-millis": "timestamp", "timestamp-micros": "timestamp",
           "local-timestamp-millis": "timestamp_ntz", "local-timestamp-micros": "timestamp_ntz"}


class Unmapped(ValueError):
    """A part of the schema no column type holds; ``where`` is its field path."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where, self.what = where, what


@dataclass(frozen=True)
class AvroField:
    """A top-level field of a record schema, as a column; ``problem`` says
    why it has no column type (``type`` is then empty)."""

    name: str
    type: str  # Spark DDL
    nullable: bool
    problem: str | None = None


def record_fields(schema_text: str) -> list[AvroField]:
    """The columns of a record schema's fields, in order."""
    schema = json.loads(schema_text)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        kind = schema.get("type") if isinstance(schema, dict) else schema
        raise Unmapped("the schema", f"it is {json.dumps(kind)}, not a record: its fields "
                       "are the columns")
    named: dict[str, Any] = {}
    _remember(schema, named)
    out = []
    for field in schema.get("fields", []):
        try:
            typ, nullable = _column_type(field["type"], field["name"], named)
        except Unmapped as err:
            out.append(AvroField(name=field["name"], type="", nullable=True, problem=str(err)))
            continue
        out.append(AvroField(name=field["name"], type=typ, nullable=nullable))
    return out


def _remember(schema: Any, named: dict[str, Any], namespace: str = "") -> None:
    """Every named type (record, enum, fixed) by its name and full name: a
    later field may refer to it by either."""
    if isinstance(schema, list):
        for part in schema:
            _remember(part, named, namespace)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind in ("record", "enum", "fixed") and "name" in schema:
        space = schema.get("namespace", namespace)
        name = schema["name"]
        full = name if "." in name or not space else f"{space}.{name}"
        named[name] = named[full] = schema
        namespace = full.rpartition(".")[0]
    if kind == "record":
        for field in schema.get("fields", []):
            _remember(field.get("type"), named, namespace)
    elif kind == "array":
        _remember(schema.get("items"), named, namespace)
    elif kind == "map":
        _remember(schema.get("values"), named, namespace)
    elif isinstance(kind, (dict, list)):
        _remember(kind, named, namespace)


def _column_type(schema: Any, where: str, named: dict[str, Any],
                 seen: frozenset[str] = frozenset()) -> tuple[str, bool]:
    """The DDL type of ``schema`` and whether it may be null."""
    if isinstance(schema, list):
        others = [s for s in schema if s != "null"]
        if len(others) != 1:
            shown = ", ".join(json.dumps(s) if isinstance(s, str) else s.get("type", "?")
                              for s in schema)
            raise Unmapped(where, f"a union of [{shown}] has no column type (a union of "
                           "null and one type has)")
        typ, _ = _column_type(others[0], where, named, seen)
        return typ, len(others) != len(schema)
    if isinstance(schema, str):
        if schema == "null":
            raise Unmapped(where, "a field that is always null has no column type")
        if schema in PRIMITIVES:
            return PRIMITIVES[schema], False
        if schema in named:
            if schema in seen:
                raise Unmapped(where, f"the record '{schema}' contains itself: a column "
                               "cannot nest without end")
            return _column_type(named[schema], where, named, seen | {schema})
        raise Unmapped(where, f"the type '{schema}' is not defined in the schema")
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal":
        return f"decimal({schema.get('precision', 10)},{schema.get('scale', 0)})", False
    if logical in LOGICAL and kind in ("int", "long"):
        return LOGICAL[logical], False
    if kind == "record":
        name = schema.get("name", "")
        parts = []
        for field in schema.get("fields", []):
            typ, _ = _column_type(field["type"], f"{where}.{field['name']}", named,
                                  seen | {name})
            parts.append(f"`{field['name']}`:{typ}")
        return f"struct<{','.join(parts)}>", False
    if kind == "array":
        typ, _ = _column_type(schema["items"], f"{where}[]", named, seen)
        return f"array<{typ}>", False
    if kind == "map":
        typ, _ = _column_type(schema["values"], f"{where}{{}}", named, seen)
        return f"map<string,{typ}>", False
    if kind in PRIMITIVES:
        return PRIMITIVES[kind], False
    return _column_type(kind, where, named, seen)


def castable(found: str, declared: str) -> bool:
    """Whether a column declared ``declared`` reads a field of type ``found``
    (the same type, a wider number, or text from any primitive)."""
    if found == declared:
        return True
    numbers = ["tinyint", "smallint", "int", "bigint", "float", "double"]
    if found in numbers and declared in numbers:
        return numbers.index(found) <= numbers.index(declared)
    if found in numbers and declared.startswith("decimal"):
        return True
    if declared == "string":
        return not found.startswith(("struct", "array", "map"))
    if found == "bigint" and declared == "timestamp":
        return True  # epoch milliseconds, as an event time may be
    return found.startswith("timestamp") and declared.startswith("timestamp")
