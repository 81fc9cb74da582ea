"""The options of a source on a Kafka topic, in each dialect's words,
made one set: Splice's ``format='kafka', topic='...'``, ksqlDB's
``kafka_topic=..., value_format=..., key_format=...`` and RisingWave's
``connector='kafka', topic=..., properties.bootstrap.server=...`` with
``FORMAT PLAIN|UPSERT ENCODE JSON``.

The normalized options a Kafka ``SourceStep`` carries (``options``):
``topic``; ``key_format`` (``kafka``: the key's bytes as text, ``json``);
``bootstrap`` when the statement names brokers; ``partitions`` when the
topic is to be created if missing (ksqlDB); ``table`` (``true``) on a table
topic, where a null value is a tombstone; ``stored`` (``false``) on a
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
KAFKA_OPTIONS = {"connector", "topic", "kafka_topic", "value_format", "key_format",
                 "partitions", "scan.startup.mode", "stored", *BOOTSTRAP}
KEY_FORMATS = {"kafka", "json"}


def is_kafka(options: dict[str, str]) -> bool:
    """Whether a source declaration reads a Kafka topic (a RisingWave
    ``connector`` other than Kafka is refused as one)."""
    return (options.get("format", "").lower() == "kafka" or "kafka_topic" in options
            or "connector" in options)


def kafka_options(node: expressions.CreateSource | expressions.CreateAs,
                  options: dict[str, str], name: str, is_table: bool,
                  pos: Callable[[str], Position],
                  where: Callable[[exp.Expression | None], Position]) -> dict[str, str]:
    """The normalized options (module docstring); an unsupported value is a
    positioned error at that value."""
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
    if value_format is not None and value_format.lower() != "json":
        option = "value_format" if "value_format" in options else "format"
        raise SqlError(pos(option), f"value format '{value_format}' is not supported",
                       "write value_format='JSON': Kafka values are read as JSON objects")
    if key_format.lower() not in KEY_FORMATS:
        option = "key_format" if "key_format" in options else "format"
        raise SqlError(pos(option), f"key format '{key_format}' is not supported",
                       "write key_format='KAFKA' (the key as text) or key_format='JSON'")
    out["key_format"] = key_format.lower()
    _row_format(node, is_table, where)
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
    if stored == "false":
        out["stored"] = "false"
    for key, value in options.items():
        if key.startswith("properties.") and key not in BOOTSTRAP:
            out["kafka." + key.removeprefix("properties.")] = value
    return out


def _row_format(node: expressions.CreateSource | expressions.CreateAs, is_table: bool,
                where: Callable[[exp.Expression | None], Position]) -> None:
    """RisingWave's FORMAT PLAIN|UPSERT ENCODE JSON: UPSERT only for a
    table, JSON the only encoding."""
    row_format, row_encode = node.args.get("row_format"), node.args.get("row_encode")
    if row_format is None:
        return
    if row_format.name not in {"PLAIN", "UPSERT"}:
        raise SqlError(where(row_format), f"FORMAT {row_format.name} is not supported",
                       "write FORMAT PLAIN ENCODE JSON, or FORMAT UPSERT ENCODE JSON for a "
                       "keyed table")
    if row_format.name == "UPSERT" and not is_table:
        raise SqlError(where(row_format), "FORMAT UPSERT reads a table: a null value deletes "
                       "its key", "write CREATE TABLE name (...) with a PRIMARY KEY, or "
                       "FORMAT PLAIN for a stream")
    if row_encode.name != "JSON":
        raise SqlError(where(row_encode), f"ENCODE {row_encode.name} is not supported",
                       "write ENCODE JSON")
