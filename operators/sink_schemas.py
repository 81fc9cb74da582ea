"""An output topic's schemas, derived from the output's Spark columns: the
Avro schema of ``VALUE_FORMAT='AVRO'`` (and of an Avro key), the JSON
Schema of ``VALUE_FORMAT='JSON_SR'``.

The Avro schema is the one ksqlDB writes for the same columns: a record
named ``io.confluent.ksql.avro_schemas.KsqlDataSourceSchema`` (or
``VALUE_AVRO_SCHEMA_FULL_NAME``), every field, nested field, array element
and map value optional (``["null", T]`` with default null: every ksqlDB
column may be null, and a later version may then add a column and stay
backward compatible), a nested record named after its path
(``KsqlDataSourceSchema_address``). Types: BIGINT ``long``, INT, SMALLINT
and TINYINT ``int``, DOUBLE ``double``, FLOAT ``float``, BOOLEAN
``boolean``, STRING ``string``, BINARY ``bytes``, DECIMAL(p, s) ``bytes``
with the ``decimal`` logical type, DATE ``int``/``date``, TIMESTAMP
``long``/``timestamp-millis`` (ksqlDB's: the microseconds are cut to
milliseconds), TIMESTAMP_NTZ ``long``/``local-timestamp-millis``, a STRUCT a
record, an ARRAY an array, a MAP with STRING keys a map. Spark's
``to_avro`` encodes the columns under that schema.

A key of one column is that column's type alone (an Avro primitive, as
ksqlDB writes a single key column unwrapped); a key of several columns is a
record named ``io.confluent.ksql.avro_schemas.KsqlKey``.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

VALUE_RECORD = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"
KEY_RECORD = "io.confluent.ksql.avro_schemas.KsqlKey"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRIMITIVES: tuple[tuple[type[DataType], Any], ...] = (
    (LongType, "long"), (IntegerType, "int"), (ShortType, "int"), (ByteType, "int"),
    (DoubleType, "double"), (FloatType, "float"), (BooleanType, "boolean"),
    (StringType, "string"), (BinaryType, "bytes"),
    (DateType, {"type": "int", "logicalType": "date"}),
    (TimestampType, {"type": "long", "logicalType": "timestamp-millis"}),
    (TimestampNTZType, {"type": "long", "logicalType": "local-timestamp-millis"}),
)


class NoAvroType(ValueError):
    """A column no Avro schema holds (its words name the column)."""


def avro_record(schema: StructType, full_name: str = VALUE_RECORD) -> dict[str, Any]:
    """The Avro record schema of ``schema``'s fields, each optional."""
    namespace, _, name = full_name.rpartition(".")
    record = _record(schema, name, "")
    return {**record, "namespace": namespace} if namespace else record


def avro_key(key: DataType) -> Any:
    """The Avro schema of an output's ``_key``: its type, or a record of a
    key of several columns."""
    if isinstance(key, StructType):
        return avro_record(key, KEY_RECORD)
    return _avro_type(key, "_key", "KsqlKey")


def _record(schema: StructType, name: str, where: str) -> dict[str, Any]:
    fields = []
    for f in schema.fields:
        path = f"{where}.{f.name}" if where else f.name
        if not _NAME.match(f.name):
            raise NoAvroType(f"column '{path}': an Avro field's name is letters, digits and _ "
                             "(not starting with a digit); rename it with AS in the SELECT")
        fields.append({"name": f.name, "type": _optional(_avro_type(f.dataType, path,
                                                                     f"{name}_{f.name}")),
                       "default": None})
    return {"type": "record", "name": name, "fields": fields}


def _optional(avro: Any) -> list[Any]:
    return ["null", avro]


def _avro_type(dtype: DataType, where: str, name: str) -> Any:
    for spark_type, avro in _PRIMITIVES:
        if isinstance(dtype, spark_type):
            return avro
    if isinstance(dtype, DecimalType):
        return {"type": "bytes", "logicalType": "decimal", "precision": dtype.precision,
                "scale": dtype.scale}
    if isinstance(dtype, StructType):
        return _record(dtype, name, where)
    if isinstance(dtype, ArrayType):
        return {"type": "array", "items": _optional(_avro_type(dtype.elementType,
                                                               f"{where}[]", name))}
    if isinstance(dtype, MapType):
        if not isinstance(dtype.keyType, StringType):
            raise NoAvroType(f"column '{where}': an Avro map's keys are strings, not "
                             f"{dtype.keyType.simpleString().upper()}; CAST the keys to STRING")
        return {"type": "map", "values": _optional(_avro_type(dtype.valueType,
                                                              f"{where}{{}}", name))}
    raise NoAvroType(f"column '{where}': {dtype.simpleString().upper()} has no Avro type "
                     "Splice writes; CAST it in the SELECT")


def json_schema(schema: StructType, title: str) -> dict[str, Any]:
    """The JSON Schema (draft-07) of the JSON object Spark's ``to_json``
    writes for ``schema``'s fields (each may be null)."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": title,
            **_json_object(schema)}


def _json_object(schema: StructType) -> dict[str, Any]:
    return {"type": "object",
            "properties": {f.name: _json_optional(f.dataType) for f in schema.fields}}


def _json_optional(dtype: DataType) -> dict[str, Any]:
    return {"oneOf": [{"type": "null"}, _json_type(dtype)]}


def _json_type(dtype: DataType) -> dict[str, Any]:
    if isinstance(dtype, (LongType, IntegerType, ShortType, ByteType)):
        return {"type": "integer"}
    if isinstance(dtype, (DoubleType, FloatType, DecimalType)):
        return {"type": "number"}
    if isinstance(dtype, BooleanType):
        return {"type": "boolean"}
    if isinstance(dtype, DateType):
        return {"type": "string", "format": "date"}
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return {"type": "string"}  # to_json's text, with or without an offset
    if isinstance(dtype, StructType):
        return _json_object(dtype)
    if isinstance(dtype, ArrayType):
        return {"type": "array", "items": _json_optional(dtype.elementType)}
    if isinstance(dtype, MapType):
        return {"type": "object", "additionalProperties": _json_optional(dtype.valueType)}
    return {"type": "string"}  # STRING; BINARY as to_json's base64
