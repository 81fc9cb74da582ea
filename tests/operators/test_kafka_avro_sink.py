"""Outputs written to Kafka topics in the schema registry's wire format
(ksqlDB's ``VALUE_FORMAT='AVRO'`` / ``'JSON_SR'``, ``FORMAT='AVRO'`` for
the key too), against the session's real broker and registry: the records
read back with confluent-kafka's own ``AvroDeserializer`` and
``JSONDeserializer`` by a real ``Consumer`` are the output's rows (a table's
changes, its deleted key a null value); the schema is registered under the
topic's subject, a compatible change of the statement is a new version, an
incompatible one is refused before any record is sent."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from splice.engine.io import StepIO
from splice.engine.schema_registry import registry_client
from splice.engine.settings import SpliceSettings
from splice.physical.explain import explain_pipeline
from splice.runtime.runner import run_pipeline
from splice.runtime.step_run import StepFailed

from tests.helpers.pipeline import append
from tests.operators.test_kafka_avro import kafka_io

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.registry]

UTC = dt.UTC
# {n}: each pipeline of a test its own source table (they share the warehouse)
ORDERS = ("CREATE STREAM orders (id BIGINT, item STRING, amount DECIMAL(10,2), ts TIMESTAMP, "
          "day DATE, qty INT, price DOUBLE, ok BOOLEAN) WITH (location='orders{n}', "
          "key='id');\n")
ROWS = [
    {"id": 1, "item": "pen", "amount": Decimal("12.50"), "qty": 3, "price": 1.5, "ok": True,
     "ts": dt.datetime(2024, 5, 1, 10, 0, 0, 123000), "day": dt.date(2024, 5, 1)},
    {"id": 2, "item": None, "amount": None, "qty": None, "price": None, "ok": None,
     "ts": None, "day": None},
]


def sink_sql(n: object, name: str, topic: str, fmt: str, select: str) -> str:
    """A source ``orders`` and the output ``name`` on ``topic`` in ``fmt``."""
    return ORDERS.format(n=n) + (f"CREATE STREAM {name} WITH (KAFKA_TOPIC='{topic}', "
                                 f"VALUE_FORMAT='{fmt}') AS SELECT {select} FROM orders;")


def client(url: str) -> Any:
    """A new client each time: a client keeps a subject's latest version."""
    return registry_client(SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_URL": url}))


def consumed(bootstrap: str, topic: str, count: int, value: Any, key: Any = None) -> list:
    """The first ``count`` records of ``topic`` as (key, value), each
    decoded by confluent-kafka's deserializers (``key`` None: its text)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out: list[tuple] = []
    try:
        for _ in range(60):
            if len(out) >= count:
                break
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            k = (key(msg.key(), SerializationContext(topic, MessageField.KEY)) if key
                 else msg.key().decode() if msg.key() is not None else None)
            v = value(msg.value(), SerializationContext(topic, MessageField.VALUE))
            out.append((k, v))
    finally:
        consumer.close()
    assert len(out) == count, out
    return out


def sink_io(spark: Any, warehouse: Any, sql: str, name: str, kafka: str,
            registry: str) -> StepIO:
    return kafka_io(spark, warehouse, sql, name, kafka, registry)


def test_an_avro_stream_output_is_read_by_avro_deserializer_and_evolves(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = f"avro-out-{uuid.uuid4().hex[:8]}"
    subject = f"{topic}-value"
    sql = sink_sql(1, "big", topic, "AVRO", "id, item, amount, ts, day, qty, price, ok")
    io = sink_io(spark, warehouse, sql, "avro1", kafka, schema_registry)
    assert "value subject: '" + subject + "'" in explain_pipeline(io.pipeline)
    assert "spark-avro" in " ".join(io.pipeline.packages())
    append(io, "orders", ROWS)
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["big_topic"].rows_written == 2

    registry = client(schema_registry)
    first = registry.get_latest_version(subject)
    schema = json.loads(first.schema.schema_str)
    assert (schema["name"], schema["namespace"]) == ("KsqlDataSourceSchema",
                                                     "io.confluent.ksql.avro_schemas")
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["id"] == {"name": "id", "type": ["null", "long"], "default": None}
    assert fields["ts"]["type"][1] == {"type": "long", "logicalType": "timestamp-millis"}
    assert fields["amount"]["type"][1]["logicalType"] == "decimal"

    decode = AvroDeserializer(registry)
    records = sorted(consumed(kafka, topic, 2, decode), key=lambda r: r[1]["id"])
    assert records == [
        ("1", {"id": 1, "item": "pen", "amount": Decimal("12.50"), "qty": 3, "price": 1.5,
               "ok": True, "ts": dt.datetime(2024, 5, 1, 10, 0, 0, 123000, tzinfo=UTC),
               "day": dt.date(2024, 5, 1)}),
        ("2", {"id": 2, "item": None, "amount": None, "qty": None, "price": None, "ok": None,
               "ts": None, "day": None}),
    ]

    # The statement gains a nullable column: a second version, BACKWARD
    # compatible; a consumer reads the records of both.
    sql2 = sink_sql(2, "big2", topic, "AVRO", "id, item, UPPER(item) AS shout")
    io2 = sink_io(spark, warehouse, sql2, "avro2", kafka, schema_registry)
    append(io2, "orders", [{"id": 3, "item": "cap"}])
    run_pipeline(io2.pipeline, io2)
    second = client(schema_registry).get_latest_version(subject)
    assert second.version == first.version + 1 and second.schema_id != first.schema_id
    later = consumed(kafka, topic, 3, decode)[2]
    assert later == ("3", {"id": 3, "item": "cap", "shout": "CAP"})
    run_pipeline(io2.pipeline, io2)  # the same schema again: its id reused, no version
    assert client(schema_registry).get_latest_version(subject).version == second.version

    # A column's type changed (BIGINT to STRING): refused, nothing registered
    # or sent.
    sql3 = sink_sql(3, "big3", topic, "AVRO", "CAST(id AS STRING) AS id, item")
    io3 = sink_io(spark, warehouse, sql3, "avro3", kafka, schema_registry)
    append(io3, "orders", [{"id": 4, "item": "ink"}])
    # The step fails with the refusal's words (splice run prints them, no traceback).
    with pytest.raises(StepFailed) as refused:
        run_pipeline(io3.pipeline, io3)
    message = str(refused.value)
    assert message.startswith("step 'big3_topic' (sink, from ")
    assert message.split(" failed: ", 1)[1].startswith(
        f"output 'big3': its AVRO schema is not BACKWARD compatible with version "
        f"{second.version} of subject '{subject}' (schema id {second.schema_id}): column "
        "'id' was BIGINT and is STRING now; the new schema cannot read the records of the "
        "latest (")
    assert "Keep the column's type (CAST it in the SELECT), or write to another topic" in message
    assert client(schema_registry).get_latest_version(subject).version == second.version


def test_an_avro_table_output_with_an_avro_key_sends_updates_and_tombstones(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = f"avro-table-{uuid.uuid4().hex[:8]}"
    sql = ("CREATE TABLE customers (id INT, name STRING) WITH (location='customers', "
           "key='id');\n"
           f"CREATE TABLE names WITH (KAFKA_TOPIC='{topic}', FORMAT='AVRO') AS "
           "SELECT id, UPPER(name) AS name FROM customers;")
    io = sink_io(spark, warehouse, sql, "avrotable", kafka, schema_registry)
    append(io, "customers", [{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}])
    run_pipeline(io.pipeline, io)
    append(io, "customers", [{"id": 1, "name": None}, {"id": 2, "name": "bea"}])
    run_pipeline(io.pipeline, io)
    registry = client(schema_registry)
    assert json.loads(registry.get_latest_version(f"{topic}-key").schema.schema_str) == "int"
    decode = AvroDeserializer(registry)
    records = consumed(kafka, topic, 4, decode, key=decode)
    assert sorted(records[:2], key=repr) == [(1, {"id": 1, "name": "ANN"}),
                                             (2, {"id": 2, "name": "BOB"})]
    assert sorted(records[2:], key=repr) == [(1, None), (2, {"id": 2, "name": "BEA"})]


def test_a_json_sr_output_is_read_by_json_deserializer(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = f"jsonsr-out-{uuid.uuid4().hex[:8]}"
    sql = sink_sql("", "big", topic, "JSON_SR", "id, item, qty, ok")
    io = sink_io(spark, warehouse, sql, "jsonsr", kafka, schema_registry)
    append(io, "orders", ROWS)
    run_pipeline(io.pipeline, io)
    registry = client(schema_registry)
    latest = registry.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON"
    decode = JSONDeserializer(None, schema_registry_client=registry)
    records = sorted(consumed(kafka, topic, 2, decode), key=lambda r: r[1]["id"])
    assert records == [("1", {"id": 1, "item": "pen", "qty": 3, "ok": True}),
                       ("2", {"id": 2, "item": None, "qty": None, "ok": None})]
