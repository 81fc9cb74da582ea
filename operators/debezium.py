"""Debezium change events (RisingWave's ``FORMAT DEBEZIUM ENCODE JSON``) as
the changes of an upsert topic, so that the table path of a Kafka source
(``operators/kafka_source.decode``, the materialization's tombstone rule,
the joins downstream) reads them unchanged.

A record's value is Debezium's envelope, bare (``{"before": .., "after": ..,
"op": .., "source": .., "ts_ms": ..}``) or wrapped by Kafka Connect's JSON
converter with ``schemas.enable=true`` (``{"schema": .., "payload": {..}}``).
Each becomes the change an upsert record would be:

- ``op`` ``c`` (insert), ``r`` (a snapshot's read) and ``u`` (update): the
  ``after`` row is the key's value;
- ``d``: a delete of the key, as a null value would be;
- a Kafka tombstone (a null value, which Debezium writes after a delete so
  that compaction drops the key) is skipped: the ``d`` before it deleted;
- anything else (not an envelope, an unknown op, a c/r/u without ``after``)
  goes to the dead letter with its reason.

The key is the table's key columns from the event's row (``after``, or
``before`` for a delete), else from the record key (Debezium's
``{"id": 1}``, or ``{"schema": .., "payload": {"id": 1}}``). All of it is
Spark's ``from_json`` and ``when`` over the records' columns: no Python
runs per record.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from splice.operators.json_source import NOT_UTF8, convert_text
from splice.sql.plan import SourceStep

ENVELOPE = "__dbz_envelope"  # the record's value as written: what a dead letter shows
CHANGE_REASON = "__dbz_reason"  # why the envelope is refused; NULL for a change to read
KEY = "__dbz_key"  # the change's key, of the table's key type
UPSERTS = ("c", "r", "u")
DELETE = "d"
NOT_ENVELOPE = ("not a Debezium change event: no 'op' (a JSON object {\"before\", \"after\", "
                "\"op\", ...} or {\"schema\", \"payload\": {...}} is read)")
# A wrapped envelope or key: Kafka Connect's JSON converter with schemas.enable=true.
_WRAPPED = "`schema` string, `payload` string"
_EVENT = "`before` string, `after` string, `op` string"


def is_debezium(step: SourceStep) -> bool:
    return step.options.get("envelope") == "debezium"


def _unwrapped(text: Column, wrapped: Column) -> Column:
    """``text``, or its ``payload`` when ``wrapped`` (the parse of ``text``
    as ``_WRAPPED``) has both a schema and a payload."""
    payload = wrapped.getField("payload")
    return F.when(wrapped.getField("schema").isNotNull() & payload.isNotNull(),
                  payload).otherwise(text)


def _key_fields(step: SourceStep, text: Column) -> Column:
    """The key columns of a JSON object, each as its text."""
    keys = step.relation.key_columns
    return F.from_json(text, StructType([StructField(k, StringType()) for k in keys]))


def _typed_key(step: SourceStep, row: Column, record_key: Column) -> Column:
    """The change's key: each key column from the row, else from the record
    key (both structs of the key columns' text)."""
    types = {c.name: c.type for c in step.declared}
    keys = step.relation.key_columns
    parts = [F.coalesce(convert_text(row.getField(k), types[k]),
                        convert_text(record_key.getField(k), types[k])) for k in keys]
    if len(parts) == 1:
        return parts[0]
    return F.struct(*[p.alias(k) for p, k in zip(parts, keys, strict=True)])


def changes(step: SourceStep, records: DataFrame, value: str, key: str) -> DataFrame:
    """``records`` (decode's: the record's value as text in column
    ``value``, its key's text in ``key``, ``__raw`` the value's bytes) with
    ``value`` and ``__raw`` the change's row as an upsert record's value
    would be (the ``after`` row's JSON; NULL for a delete), and with
    :data:`ENVELOPE` (the value as written), :data:`CHANGE_REASON` and
    :data:`KEY`. Each part is a column the next select reads, so that
    Spark parses a record's envelope once."""
    text = F.col(value)
    outer = records.select("*", F.from_json(text, _WRAPPED).alias("__dbz_outer"),
                           F.from_json(F.col(key), _WRAPPED).alias("__dbz_kouter"))
    event = outer.select(
        "*", F.from_json(_unwrapped(text, F.col("__dbz_outer")), _EVENT).alias("__dbz_event"),
        _key_fields(step, _unwrapped(F.col(key), F.col("__dbz_kouter"))).alias("__dbz_kfields"))
    op = F.col("__dbz_event").getField("op")
    after = F.col("__dbz_event").getField("after")
    before = F.col("__dbz_event").getField("before")
    upsert = op.isin(*UPSERTS)
    row = F.when(op == DELETE, before).otherwise(after)
    keyed = event.select("*", _key_fields(step, row).alias("__dbz_rfields"))
    reason = (F.when(text.isNull(), F.lit(None).cast("string"))
              .when(~F.is_valid_utf8(text), F.lit(NOT_UTF8))
              .when(op.isNull(), F.lit(NOT_ENVELOPE))
              .when(~op.isin(*UPSERTS, DELETE), F.concat(
                  F.lit("unknown Debezium op '"), op, F.lit("': c, r, u and d are read")))
              .when(upsert & after.isNull(), F.concat(
                  F.lit("Debezium op '"), op, F.lit("' without an 'after' row"))))
    change = F.when(upsert, after)
    passed = [c for c in records.columns if c not in (value, "__raw")]
    return keyed.select(
        *passed, change.alias(value), change.cast("binary").alias("__raw"),
        text.alias(ENVELOPE), reason.alias(CHANGE_REASON),
        _typed_key(step, F.col("__dbz_rfields"), F.col("__dbz_kfields")).alias(KEY))
