"""Kafka sources of Avro and JSON Schema values behind the schema registry
(ksqlDB's VALUE_FORMAT='AVRO' and 'JSON_SR'), against the session's real
broker and registry: records written by confluent-kafka's own serializers,
decoded by spark-avro inside Spark, columns inferred from the registry or
declared, records of older and newer compatible schemas read into the
statement's columns, and every record that cannot be read in the dead
letter with its reason, partition and offset."""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from splice.engine.io import StepIO
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.schema_registry import registry_client
from splice.engine.settings import SpliceSettings
from splice.physical.explain import explain_pipeline
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from tests.helpers.pipeline import make_io, output_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.registry]

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}
# v2 adds a field with a default: records of v1 read it as 1
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"],
                                   {"name": "qty", "type": "int", "default": 1}]}


def fresh_topic(bootstrap: str, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name, 1)
    return name


def serializer(url: str, schema: dict) -> AvroSerializer:
    client = registry_client(SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_URL": url}))
    return AvroSerializer(client, json.dumps(schema), conf={"auto.register.schemas": True})


def avro_records(url: str, topic: str, schema: dict, rows: list[dict]) -> list[Record]:
    encode = serializer(url, schema)
    context = SerializationContext(topic, MessageField.VALUE)
    return [Record(value=encode(row, context), key=str(row["id"])) for row in rows]


def kafka_io(spark: Any, warehouse: Any, sql: str, name: str, bootstrap: str,
             registry: str) -> StepIO:
    io = make_io(spark, warehouse, sql, name=name)
    settings = SpliceSettings.from_env(kafka_bootstrap=bootstrap, schema_registry_url=registry)
    return Workspace(io.pipeline, settings, warehouse=io.warehouse, spark=io.spark).io


def dead_letters(io: StepIO, source: str) -> list[tuple]:
    rows = io.spark.read.format("delta").load(
        io.warehouse.dead_letter_path(io.pipeline.name, source)).collect()
    return sorted((r["offset"], r["reason"]) for r in rows)


def test_columns_inferred_from_the_registry_read_old_and_new_records(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = fresh_topic(kafka, "orders")
    produce(kafka, topic, avro_records(schema_registry, topic, ORDER_V1,
                                       [{"id": 1, "item": "pen"}, {"id": 2, "item": "ink"}]))
    produce(kafka, topic, avro_records(schema_registry, topic, ORDER_V2,
                                       [{"id": 3, "item": "cap", "qty": 5}]))
    sql = (f"CREATE STREAM orders (id BIGINT KEY) WITH (KAFKA_TOPIC='{topic}', "
           "VALUE_FORMAT='AVRO');\n"
           "INSERT INTO result SELECT STREAM id, item, qty FROM orders;")
    io = kafka_io(spark, warehouse, sql, "inferred", kafka, schema_registry)
    source = io.pipeline.sources["orders"]
    assert [(c.name, c.type) for c in source.declared] == [
        ("id", "bigint"), ("item", "string"), ("qty", "int")]
    latest = registry_client(SpliceSettings.from_env(
        {"SPLICE_SCHEMA_REGISTRY_URL": schema_registry})).get_latest_version(f"{topic}-value")
    assert source.options["value_schema_resolved"] == str(latest.schema_id)
    explained = explain_pipeline(io.pipeline)
    assert f"subject '{topic}-value', schema id {latest.schema_id}" in explained
    run_pipeline(io.pipeline, io)
    assert sorted(output_rows(io, "result", "id", "item", "qty")) == [
        (1, "pen", 1), (2, "ink", 1), (3, "cap", 5)]
    # a later record of the older schema, in the next run, incrementally
    produce(kafka, topic, avro_records(schema_registry, topic, ORDER_V1,
                                       [{"id": 4, "item": "pad"}]))
    run_pipeline(io.pipeline, io)
    assert sorted(output_rows(io, "result", "id", "item", "qty")) == [
        (1, "pen", 1), (2, "ink", 1), (3, "cap", 5), (4, "pad", 1)]


def test_declared_columns_and_records_that_cannot_be_read_go_to_the_dead_letter(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = fresh_topic(kafka, "orders")
    good = avro_records(schema_registry, topic, ORDER_V1, [{"id": 1, "item": "pen"}])
    framed_id = struct.unpack(">I", good[0].value[1:5])[0]
    produce(kafka, topic, [
        *good,
        Record(value=b'{"id": 2, "item": "ink"}', key="2"),  # offset 1: plain JSON
        Record(value=b"\x00" + struct.pack(">I", 987654) + good[0].value[5:], key="3"),
        Record(value=good[0].value[:6], key="4"),  # offset 3: cut short
        Record(value=None, key="5"),  # offset 4: a null value on a stream, skipped
    ])
    sql = (f"CREATE STREAM orders (id BIGINT, item VARCHAR) WITH (KAFKA_TOPIC='{topic}', "
           "VALUE_FORMAT='AVRO', KEY='id');\n"
           "INSERT INTO result SELECT STREAM id, item FROM orders;")
    io = kafka_io(spark, warehouse, sql, "declared", kafka, schema_registry)
    assert "value_schema_id" not in io.pipeline.sources["orders"].options
    reports = run_pipeline(io.pipeline, io)
    assert sorted(output_rows(io, "result", "id", "item")) == [(1, "pen")]
    assert dead_letters(io, "orders") == [
        (1, "not in the schema registry's wire format (a magic byte 0 and a 4-byte schema "
            "id before the value)"),
        (2, f"schema id 987654 is not a version of subject '{topic}-value'"),
        (3, f"the bytes do not decode as Avro with schema id {framed_id}"),
    ]
    source = next(r for r in reports if r.step_id == "orders")
    assert source.dead_letters == 3


def test_an_incompatible_version_is_named_in_the_dead_letter(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = fresh_topic(kafka, "orders")
    subject = f"{topic}-value"
    client = registry_client(SpliceSettings.from_env(
        {"SPLICE_SCHEMA_REGISTRY_URL": schema_registry}))
    produce(kafka, topic, avro_records(schema_registry, topic, ORDER_V1,
                                       [{"id": 1, "item": "pen"}]))
    client.set_compatibility(subject_name=subject, level="NONE")
    # a version whose item is a number: registered (compatibility NONE) but
    # not readable as the statement's pinned schema
    other = {**ORDER_V1, "fields": [{"name": "id", "type": "long"},
                                    {"name": "item", "type": "double"}]}
    bad = avro_records(schema_registry, topic, other, [{"id": 2, "item": 2.5}])
    produce(kafka, topic, bad)
    v1_id = client.get_version(subject, 1).schema_id
    sql = (f"CREATE STREAM orders (id BIGINT KEY) WITH (KAFKA_TOPIC='{topic}', "
           f"VALUE_FORMAT='AVRO', VALUE_SCHEMA_ID={v1_id});\n"
           "INSERT INTO result SELECT STREAM id, item FROM orders;")
    io = kafka_io(spark, warehouse, sql, "incompatible", kafka, schema_registry)
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "item") == [(1, "pen")]
    [(offset, reason)] = dead_letters(io, "orders")
    bad_id = struct.unpack(">I", bad[0].value[1:5])[0]
    assert offset == 1
    assert reason.startswith(f"schema id {bad_id} cannot be read as schema id {v1_id} (")
    assert "reader type: string not compatible with writer type: double" in reason


def test_json_sr_values_are_json_after_the_registrys_header(
        spark, warehouse, kafka, schema_registry) -> None:
    topic = fresh_topic(kafka, "orders")
    client = registry_client(SpliceSettings.from_env(
        {"SPLICE_SCHEMA_REGISTRY_URL": schema_registry}))
    schema = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "item": {"type": "string"}}}
    encode = JSONSerializer(json.dumps(schema), client, conf={"auto.register.schemas": True})
    context = SerializationContext(topic, MessageField.VALUE)
    produce(kafka, topic, [Record(value=encode({"id": 1, "item": "pen"}, context), key="1"),
                           Record(value=b'{"id": 2, "item": "ink"}', key="2")])
    sql = (f"CREATE STREAM orders (id INT, item STRING) WITH (KAFKA_TOPIC='{topic}', "
           "VALUE_FORMAT='JSON_SR', KEY='id');\n"
           "INSERT INTO result SELECT STREAM id, item FROM orders;")
    io = kafka_io(spark, warehouse, sql, "json_sr", kafka, schema_registry)
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "item") == [(1, "pen")]
    assert dead_letters(io, "orders") == [
        (1, "not in the schema registry's wire format (a magic byte 0 and a 4-byte schema "
            "id before the value)")]


CUSTOMER = {"type": "record", "name": "Customer", "namespace": "shop",
            "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}


def test_a_stream_table_join_over_risingwaves_upsert_avro_table(
        spark, warehouse, kafka, schema_registry) -> None:
    """The table of an UPSERT ENCODE AVRO topic (a null value deletes its
    key), joined from a stream of Avro orders; the registry is the
    statement's own (RisingWave's schema.registry)."""
    orders, customers = fresh_topic(kafka, "orders"), fresh_topic(kafka, "customers")
    produce(kafka, customers, [
        *avro_records(schema_registry, customers, CUSTOMER,
                      [{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob"}]),
        Record(value=None, key="2")])  # Bob deleted
    produce(kafka, orders, avro_records(schema_registry, orders, {
        "type": "record", "name": "Order", "namespace": "shop",
        "fields": [{"name": "id", "type": "long"}, {"name": "customer_id", "type": "long"}]},
        [{"id": 10, "customer_id": 1}, {"id": 11, "customer_id": 2}]))
    encode = f"FORMAT {{}} ENCODE AVRO (schema.registry = '{schema_registry}')"
    sql = (f"CREATE TABLE customers (PRIMARY KEY (id)) WITH (connector='kafka', "
           f"topic='{customers}') {encode.format('UPSERT')};\n"
           f"CREATE SOURCE orders WITH (connector='kafka', topic='{orders}') "
           f"{encode.format('PLAIN')};\n"
           "INSERT INTO result SELECT STREAM o.id, c.name FROM orders o "
           "LEFT JOIN customers c ON c.id = o.customer_id;")
    io = make_io(spark, warehouse, sql, name="upsert_avro")
    io = Workspace(io.pipeline, SpliceSettings.from_env({}, kafka_bootstrap=kafka),
                   warehouse=io.warehouse, spark=io.spark).io
    run_pipeline(io.pipeline, io)
    assert sorted(output_rows(io, "result", "id", "name")) == [(10, "Ann"), (11, None)]
