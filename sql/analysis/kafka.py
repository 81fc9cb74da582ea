"""The options of a source on a Kafka topic, in each dialect's words,
made one set: Splice's ``format='kafka', topic='...'``, ksqlDB's
``kafka_topic=..., value_format=..., key_format=...`` and RisingWave's
``connector='kafka', topic=..., properties.bootstrap.server=...`` with
``FORMAT PLAIN|UPSERT ENCODE JSON|AVRO`` and ``FORMAT DEBEZIUM ENCODE JSON``.

The normalized options a Kafka ``SourceStep`` carries (``options``):
``topic``; ``key_format`` (``kafka``: the key's bytes as text, ``json``); ``value_format`` when not
JSON (``avro``, ``json_sr``: the registry's wire format), with
``value_schema_id`` when the statement pins the schema (or its columns
were inferred from one);
``bootstrap`` when the statement names brokers; ``partitions`` when the
topic is to be created if missing (ksqlDB); ``table`` (``true``) on a table
topic, where a null value is a tombstone; ``envelope`` (``debezium``) on a
table topic of Debezium change events, each read as the upsert or delete of
its key (operators/debezium.py); ``stored`` (``false``) on a
stream topic read in place by the one step that reads it, without a source
table (operators/kafka_in_place.py); ``kafka.<name>`` for every
``properties.<name>`` passed on to the Kafka client.
"""

from __future__ import annotations

from collections.abc import Callable

from splice.sql import expressions
from splice.sql.errors import Position, SqlError
from sqlglot import exp

# Option names that mean Kafka, in any dialect, and how each is read.
TOPIC = ("topic", "kafka_topic")
BOOTSTRAP = ("properties.bootstrap.server", "properties.bootstrap.servers", "bootstrap",
             "bootstrap.servers")
# The registry a statement names itself (RisingWave's ENCODE AVRO
# (schema.registry = '...')), over the settings'.
REGISTRY_URL = "schema_registry_url"
KAFKA_OPTIONS = {"connector", "topic", "kafka_topic", "value_format", "key_format",
                 "partitions", "scan.startup.mode", "stored", "value_schema_id",
                 "value_avro_schema_full_name", "envelope", REGISTRY_URL, *BOOTSTRAP}
KEY_FORMATS = {"kafka", "json"}
# Value formats read: JSON objects; Avro records and JSON objects in the
# schema registry's wire format (a magic byte 0 and a 4-byte schema id first).
VALUE_FORMATS = {"json", "avro", "json_sr"}
REFUSED_VALUE_FORMATS = {
    "protobuf": "Protobuf values are not read yet (Spark's spark-protobuf is not served "
                "here; docs/decisions/avro-values.md)",
    "protobuf_nosr": "Protobuf values are not read yet",
    "avro_nosr": "Avro values without a schema registry are not read",
    "delimited": "DELIMITED values are not read",
    "kafka": "a value in the KAFKA format (one primitive) is not read",
    "none": "a source needs value columns",
}


def is_kafka(options: dict[str, str]) -> bool:
    """Whether a source declaration reads a Kafka topic (a RisingWave
    ``connector`` other than Kafka is refused as one)."""
    return (options.get("format", "").lower() == "kafka" or "kafka_topic" in options
            or "connector" in options)


def value_format_of(options: dict[str, str]) -> str:
    """The value format a Kafka source's options name, lower case (ksqlDB's
    FORMAT names the key's and the value's at once)."""
    fmt = options.get("format")
    if "kafka_topic" in options and fmt is not None and fmt.lower() != "kafka":
        return fmt.lower()
    return options.get("value_format", "json").lower()


def kafka_options(node: expressions.CreateSource | expressions.CreateAs,
                  options: dict[str, str], name: str, is_table: bool,
                  pos: Callable[[str], Position],
                  where: Callable[[exp.Expression | None], Position],
                  key_formats: frozenset[str] | set[str] = KEY_FORMATS) -> dict[str, str]:
    """The normalized options (module docstring); an unsupported value is a
    positioned error at that value. ``key_formats``: the key formats taken
    (a sink's adds AVRO, which a source does not read)."""
    out: dict[str, str] = {"topic": next((options[k] for k in TOPIC if k in options), name)}
    connector = options.get("connector")
    if connector is not None and connector.lower() != "kafka":
        raise SqlError(pos("connector"), f"connector '{connector}' is not supported",
                       "use connector='kafka' (or a Delta or JSON source: format='delta')")
    fmt = options.get("format")
    value_format = options.get("value_format")
    key_format = options.get("key_format", "kafka")
    if "kafka_topic" in options and fmt is not None and fmt.lower() != "kafka":
        # ksqlDB's FORMAT sets the key's and the value's format at once.
        value_format, key_format = fmt, fmt
    value_format = (value_format or "json").lower()
    if value_format not in VALUE_FORMATS:
        option = "value_format" if "value_format" in options else "format"
        why = REFUSED_VALUE_FORMATS.get(value_format, "it is not a format Splice reads")
        raise SqlError(pos(option), f"value format '{value_format.upper()}' is not supported: "
                       f"{why}", "write VALUE_FORMAT='AVRO', 'JSON_SR' (through the schema "
                       "registry) or 'JSON'")
    if value_format != "json":  # JSON is the default (and the definitions made before)
        out["value_format"] = value_format
    if "value_schema_id" in options:
        text = options["value_schema_id"]
        if value_format != "avro" or not text.isdigit():
            raise SqlError(pos("value_schema_id"), f"VALUE_SCHEMA_ID '{text}' needs "
                           "VALUE_FORMAT='AVRO' and a whole number",
                           "write VALUE_SCHEMA_ID=<the registry's id> with VALUE_FORMAT='AVRO'")
        out["value_schema_id"] = text
    if REGISTRY_URL in options:
        out[REGISTRY_URL] = options[REGISTRY_URL]
    if "value_avro_schema_full_name" in options:
        if value_format != "avro":
            raise SqlError(pos("value_avro_schema_full_name"), "VALUE_AVRO_SCHEMA_FULL_NAME "
                           "names an Avro record", "write VALUE_FORMAT='AVRO'")
        out["value_avro_schema_full_name"] = options["value_avro_schema_full_name"]
    if key_format.lower() == "none":
        key_format = "kafka"  # ksqlDB's NONE: no key columns, the key is not read
    if key_format.lower() not in key_formats:
        option = "key_format" if "key_format" in options else "format"
        raise SqlError(pos(option), f"key format '{key_format}' is not supported",
                       "write key_format='KAFKA' (the key as text) or key_format='JSON'")
    out["key_format"] = key_format.lower()
    if _row_format(node, is_table, where) == "DEBEZIUM" or _envelope(
            options, is_table, value_format, pos):
        out["envelope"] = "debezium"
        out["key_format"] = "json"  # Debezium's key is a JSON object of the key columns
    mode = options.get("scan.startup.mode", "earliest").lower()
    if mode != "earliest":
        raise SqlError(pos("scan.startup.mode"), f"scan.startup.mode '{mode}' is not supported",
                       "write scan.startup.mode='earliest' (the first run reads the topic "
                       "from its start; later runs go on from the checkpoint's offsets)")
    bootstrap = next((options[k] for k in BOOTSTRAP if k in options), None)
    if bootstrap is not None:
        out["bootstrap"] = bootstrap
    if "partitions" in options:
        text = options["partitions"]
        if not text.isdigit() or int(text) < 1:
            raise SqlError(pos("partitions"), f"partitions must be a whole number above 0, "
                           f"not '{text}'", "write partitions=1 (or more)")
        out["partitions"] = text
    if is_table:
        out["table"] = "true"
    stored = options.get("stored", "true").lower()
    if stored not in {"true", "false"}:
        raise SqlError(pos("stored"), f"stored must be 'true' or 'false', not '{stored}'",
                       "write stored='false' to read the topic in place, without a source "
                       "table (the default, 'true', stores it)")
    if stored == "false" and is_table:
        raise SqlError(pos("stored"), "a table topic is stored: its keys' latest rows are "
                       "its table", "remove stored='false', or declare a STREAM")
    if stored == "false" and value_format == "avro":
        raise SqlError(pos("stored"), "a topic of Avro values is stored: its writers' schemas "
                       "are asked of the registry at each micro-batch of its source table",
                       "remove stored='false'")
    if stored == "false":
        out["stored"] = "false"
    for key, value in options.items():
        if key.startswith("properties.") and key not in BOOTSTRAP:
            out["kafka." + key.removeprefix("properties.")] = value
    return out


def _envelope(options: dict[str, str], is_table: bool, value_format: str,
              pos: Callable[[str], Position]) -> bool:
    """Splice's ``envelope='debezium'``: FORMAT DEBEZIUM ENCODE JSON in a WITH
    (...) of any dialect; a table's, of JSON values."""
    if "envelope" not in options:
        return False
    envelope = options["envelope"].lower()
    if envelope != "debezium":
        raise SqlError(pos("envelope"), f"envelope '{options['envelope']}' is not supported",
                       "write envelope='debezium' (Debezium's change events), or drop it")
    if not is_table:
        raise SqlError(pos("envelope"), "a Debezium topic is read as a table: its change "
                       "events insert, update and delete rows by the table's key",
                       "write CREATE TABLE name (...) with a PRIMARY KEY")
    if value_format != "json":
        raise SqlError(pos("envelope"), f"Debezium envelopes are read as JSON, not "
                       f"{value_format.upper()}", "write value_format='JSON'")
    return True


def _row_format(node: expressions.CreateSource | expressions.CreateAs, is_table: bool,
                where: Callable[[exp.Expression | None], Position]) -> str | None:
    """RisingWave's FORMAT PLAIN|UPSERT|DEBEZIUM ENCODE JSON|AVRO: UPSERT
    and DEBEZIUM only for a table, DEBEZIUM only in JSON; the FORMAT's word."""
    row_format, row_encode = node.args.get("row_format"), node.args.get("row_encode")
    if row_format is None:
        return None
    if row_format.name not in {"PLAIN", "UPSERT", "DEBEZIUM"}:
        raise SqlError(where(row_format), f"FORMAT {row_format.name} is not supported",
                       "write FORMAT PLAIN ENCODE JSON, FORMAT UPSERT ENCODE JSON or FORMAT "
                       "DEBEZIUM ENCODE JSON for a keyed table")
    if row_format.name == "UPSERT" and not is_table:
        raise SqlError(where(row_format), "FORMAT UPSERT reads a table: a null value deletes "
                       "its key", "write CREATE TABLE name (...) with a PRIMARY KEY, or "
                       "FORMAT PLAIN for a stream")
    if row_format.name == "DEBEZIUM" and not is_table:
        raise SqlError(where(row_format), "FORMAT DEBEZIUM reads a table: its change events "
                       "insert, update and delete rows by the table's key (RisingWave refuses "
                       "a Debezium SOURCE too)", "write CREATE TABLE name (...) with a PRIMARY "
                       "KEY")
    if row_encode.name not in ("JSON", "AVRO"):
        raise SqlError(where(row_encode), f"ENCODE {row_encode.name} is not supported",
                       "write ENCODE JSON, or ENCODE AVRO (schema.registry = '...')")
    if row_format.name == "DEBEZIUM" and row_encode.name != "JSON":
        raise SqlError(where(row_encode), f"FORMAT DEBEZIUM ENCODE {row_encode.name} is not "
                       "supported: Debezium envelopes are read as JSON only (an Avro envelope "
                       "nests the row's record in before/after, which the Avro reader's "
                       "column check does not follow yet; docs/decisions/debezium-tables.md)",
                       "write FORMAT DEBEZIUM ENCODE JSON (Kafka Connect's JsonConverter), or "
                       "unwrap the envelope with Debezium's ExtractNewRecordState and read "
                       "FORMAT UPSERT ENCODE AVRO")
    return row_format.name
