"""The acceptance cases over Kafka topics of registry formats (``splice test
--sources kafka --value-format avro|json_sr``).

As :mod:`splice.testing.kafka_cases`, each source of a case is declared on a
topic of its own and the case's rows are produced to it as records; here
the values are what a producer behind a schema registry writes: the
Confluent wire format (a magic byte 0, the schema's 4-byte id, then the
encoded value), encoded by confluent-kafka's own ``AvroSerializer`` or
``JSONSerializer`` (the client library's, not Splice's encoder), under the
subject ``<topic>-value`` (TopicNameStrategy, as ksqlDB's producers).

Each source's schema is made from its declared columns and registered when
the case is prepared (before any record, so that a source with no rows in
a run still finds its subject):

- Avro: a record of one optional field per column (``["null", T]``, default
  null), INT ``int``, BIGINT ``long``, DOUBLE ``double``, BOOLEAN
  ``boolean``, STRING ``string``, DATE ``int``/``date``, TIMESTAMP
  ``long``/``timestamp-micros`` (a case's times keep their microseconds),
  DECIMAL ``bytes``/``decimal``; the statement is declared as
  ``VALUE_FORMAT='AVRO'`` on that subject.
- JSON_SR: a JSON Schema (draft-07) object with a property per column, each
  of its JSON type or null (times and dates are text, as the JSON source
  reads them); the statement is declared as ``VALUE_FORMAT='JSON_SR'``.

A row's values are converted to their columns' types before they are
encoded (a typed producer cannot write ``'abc'`` in an INT field): a value
that does not convert is a mistake of the case for this format, named with
its source, column and value. Keys, tombstones, timestamps and partitions
are as over JSON values.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from splice.engine.kafka_topics import Record
from splice.sql.plan import SourceStep
from splice.testing.cases import CaseDataError
from splice.testing.kafka_cases import KafkaCaseSources, topic_options

FORMATS = ("avro", "json_sr")
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AVRO_PRIMITIVES = {"int": "int", "smallint": "int", "tinyint": "int", "bigint": "long",
                    "double": "double", "float": "float", "boolean": "boolean",
                    "string": "string", "binary": "bytes"}
_JSON_TYPES = {"int": "integer", "smallint": "integer", "tinyint": "integer",
               "bigint": "integer", "double": "number", "float": "number",
               "boolean": "boolean"}


def avro_schema(step: SourceStep) -> dict[str, Any]:
    """The Avro record a producer of ``step``'s declared columns registers."""
    fields = []
    for c in step.declared:
        if not _AVRO_NAME.fullmatch(c.name):
            raise CaseDataError(f"source '{step.name}': column '{c.name}' is not an Avro "
                                "field name (letters, digits and _): the case cannot run "
                                "over Avro values")
        fields.append({"name": c.name, "type": ["null", _avro_type(step, c.name, c.type)],
                       "default": None})
    return {"type": "record", "name": _record_name(step.name), "namespace": "splice.cases",
            "fields": fields}


def _record_name(source: str) -> str:
    """An Avro name for the source's record (a case's source may be named
    in any way SQL allows)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", source)
    return name if _AVRO_NAME.fullmatch(name) else f"_{name}"


def _avro_type(step: SourceStep, column: str, typ: str) -> Any:
    if typ in _AVRO_PRIMITIVES:
        return _AVRO_PRIMITIVES[typ]
    if typ == "date":
        return {"type": "int", "logicalType": "date"}
    if typ in ("timestamp", "timestamp_ntz"):
        logical = "timestamp-micros" if typ == "timestamp" else "local-timestamp-micros"
        return {"type": "long", "logicalType": logical}
    decimal = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", typ)
    if decimal:
        return {"type": "bytes", "logicalType": "decimal", "precision": int(decimal.group(1)),
                "scale": int(decimal.group(2))}
    raise CaseDataError(f"source '{step.name}': column '{column}' is {typ.upper()}, which the "
                        "case runner does not write as Avro (it writes INT, BIGINT, DOUBLE, "
                        "BOOLEAN, STRING, DATE, TIMESTAMP and DECIMAL columns)")


def json_schema(step: SourceStep) -> dict[str, Any]:
    """The JSON Schema a producer of ``step``'s declared columns registers."""
    properties = {c.name: {"type": [_json_type(c.type), "null"]} for c in step.declared}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": step.name,
            "type": "object", "properties": properties}


def _json_type(typ: str) -> str:
    return "number" if typ.startswith("decimal") else _JSON_TYPES.get(typ, "string")


def typed(step: SourceStep, row: dict[str, Any], for_json: bool) -> dict[str, Any]:
    """The row's values as its columns' types, every declared column named
    (a column the row leaves out is null); JSON's times and dates as text."""
    by_lower = {str(k).lower(): v for k, v in row.items()}
    out: dict[str, Any] = {}
    for c in step.declared:
        value = by_lower.get(c.name.lower())
        try:
            out[c.name] = _typed(value, c.type, for_json)
        except (ValueError, TypeError, InvalidOperation):
            raise CaseDataError(f"rows for '{step.name}': column '{c.name}' holds {value!r}, "
                                f"which is not {c.type.upper()}: a producer of typed values "
                                "cannot write it (run the case over JSON values)") from None
    return out


def _typed(value: Any, typ: str, for_json: bool) -> Any:
    if value is None:
        return None
    if typ in ("int", "bigint", "smallint", "tinyint"):
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(value)
        return int(value)
    if typ in ("double", "float"):
        return float(value)
    if typ == "boolean":
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "false"):
            return str(value).lower() == "true"
        raise ValueError(value)
    if typ.startswith("decimal"):
        return float(value) if for_json else Decimal(str(value))
    if typ in ("timestamp", "timestamp_ntz"):
        moment = _moment(value)
        if for_json:
            return moment.isoformat(sep=" ")
        if typ == "timestamp" and moment.tzinfo is None:
            return moment.replace(tzinfo=dt.UTC)  # the session's zone
        return moment
    if typ == "date":
        day = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
        return day.isoformat() if for_json else day
    return str(value)


def _moment(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # epoch milliseconds
        return dt.datetime.fromtimestamp(value / 1000, dt.UTC)
    return dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))


@dataclass
class RegistryCaseSources(KafkaCaseSources):
    """:class:`KafkaCaseSources` whose values are ``value_format``'s records
    (``avro`` or ``json_sr``), their schemas registered at ``registry``."""

    registry: str = ""
    value_format: str = "avro"
    _encoders: dict[str, Any] = field(default_factory=dict)  # source step id -> serializer

    def __post_init__(self) -> None:
        if self.value_format not in FORMATS:
            raise ValueError(f"value format {self.value_format!r}: one of {', '.join(FORMATS)}")

    @property
    def schema_registry_url(self) -> str | None:
        return self.registry

    def source_options(self, step: SourceStep, topic: str, table: bool) -> dict[str, str]:
        """As ``VALUE_FORMAT='AVRO'`` (or JSON_SR) on ``topic`` declares it;
        the schema registered now, under the topic's subject."""
        options = {**topic_options(step, topic, table), "value_format": self.value_format}
        self._encoders[step.id] = self._encoder(step, topic)
        if self.value_format == "avro":
            options["value_subject"] = f"{topic}-value"
        return options

    def _encoder(self, step: SourceStep, topic: str) -> Any:
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.schema_registry.json_schema import JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        from splice.engine.schema_registry import registry_client
        from splice.engine.settings import SpliceSettings

        client = registry_client(SpliceSettings.from_env(
            {"SPLICE_SCHEMA_REGISTRY_URL": self.registry}))
        context = SerializationContext(topic, MessageField.VALUE)
        if self.value_format == "avro":
            text = json.dumps(avro_schema(step))
            client.register_schema(f"{topic}-value", Schema(text, "AVRO"))
            avro = AvroSerializer(client, text, conf={"auto.register.schemas": True})
            return lambda row: avro(typed(step, row, for_json=False), context)
        text = json.dumps(json_schema(step))
        client.register_schema(f"{topic}-value", Schema(text, "JSON"))
        encode = JSONSerializer(text, client, conf={"auto.register.schemas": True})
        return lambda row: encode(typed(step, row, for_json=True), context)

    def value_of(self, step: SourceStep, row: dict[str, Any], record: Record) -> Record:
        if record.value is None:  # a tombstone stays a null value
            return record
        try:
            return replace(record, value=self._encoders[step.id](row))
        except CaseDataError:
            raise
        except Exception as err:  # the serializer's refusal, in its words
            raise CaseDataError(f"rows for '{step.name}': the {self.value_format.upper()} "
                                f"serializer refused {row!r}: {err}") from None
