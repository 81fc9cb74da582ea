"""Lenses' way to read a topic: the topic declared with its storage formats
(``CREATE TABLE name (_key ..., fields) FORMAT (key, value)``) and read by
name, as a stream or as a table, with its ``_key`` and ``_value`` facets;
against the real broker the test session starts."""

from __future__ import annotations

import uuid

import pytest
from splice.engine.kafka_topics import Record, produce, topic_config, topic_exists
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import output_rows
from tests.operators.test_kafka_source import kafka_io

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

PIPELINE = """
SET defaults.topic.autocreate=true;
CREATE TABLE {orders} (_key STRING, customer_id INT, item STRING, amount INT)
  FORMAT (STRING, JSON) PROPERTIES (partitions=2);
CREATE TABLE {customers} (_key.id INT, name STRING) FORMAT (JSON, JSON)
  PROPERTIES (compacted=true);
INSERT INTO big SELECT STREAM _key AS order_id, _value.item AS item
FROM {orders} WHERE amount > 10;
WITH ordersTable AS (SELECT TABLE * FROM {orders});
INSERT INTO latest SELECT TABLE item, amount FROM ordersTable;
WITH customersTable AS (SELECT TABLE * FROM {customers});
INSERT INTO enriched SELECT STREAM c.name, o.item
FROM {orders} AS o JOIN customersTable AS c ON o.customer_id = c._key.id;
"""


def test_a_lenses_topic_is_read_by_name_as_a_stream_and_as_a_table(
        spark, warehouse, kafka) -> None:
    suffix = uuid.uuid4().hex[:8]
    orders, customers = f"orders_{suffix}", f"customers_{suffix}"
    io = kafka_io(spark, warehouse, PIPELINE.format(orders=orders, customers=customers),
                  "lenses", kafka)
    # The first run creates the topics it declares (Lenses' CREATE TABLE).
    assert [r.step_id for r in run_pipeline(io.pipeline, io) if r.rows_written] == []
    assert topic_exists(kafka, orders) and topic_exists(kafka, customers)
    assert topic_config(kafka, customers).get("cleanup.policy") == "compact"
    assert topic_config(kafka, orders).get("cleanup.policy") == "delete"

    produce(kafka, customers, [
        Record({"name": "John"}, {"id": 1}),
        Record({"name": "Frank"}, {"id": 2}),
        Record({"name": "Nobody"}, "not json"),  # a key that does not decode
    ])
    produce(kafka, orders, [
        Record({"customer_id": 1, "item": "Computer", "amount": 50}, "o1"),
        Record({"customer_id": 2, "item": "Mouse", "amount": 5}, "o2"),
        Record({"customer_id": 1, "item": "Desk", "amount": 20}, "o3"),
        Record("not json", "o4"),
    ])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "big", "order_id", "item") == [("o1", "Computer"), ("o3", "Desk")]
    assert output_rows(io, "latest", "_key", "item", "amount") == [
        ("o1", "Computer", 50), ("o2", "Mouse", 5), ("o3", "Desk", 20)]
    assert output_rows(io, "enriched", "name", "item") == [
        ("Frank", "Mouse"), ("John", "Computer"), ("John", "Desk")]
    dead = {(r["offset"], r["reason"]) for r in spark.read.format("delta").load(
        warehouse.dead_letter_path("lenses", customers)).collect()}
    assert dead == {(2, "key 'not json' is not STRUCT<`ID`:INT> (key format JSON)")}
    dead_orders = spark.read.format("delta").load(
        warehouse.dead_letter_path("lenses", orders)).collect()
    assert [(r["record"], r["reason"]) for r in dead_orders] == [
        ("not json", "not a JSON object")]

    # A null value: a row without a value in the stream (no join, no
    # projection past the filter), the tombstone of its key in the table.
    produce(kafka, orders, [Record(None, "o1"),
                            Record({"customer_id": 2, "item": "Lamp", "amount": 30}, "o5")])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "latest", "_key", "item", "amount") == [
        ("o2", "Mouse", 5), ("o3", "Desk", 20), ("o5", "Lamp", 30)]
    assert output_rows(io, "big", "order_id", "item") == [
        ("o1", "Computer"), ("o3", "Desk"), ("o5", "Lamp")]
    assert output_rows(io, "enriched", "name", "item") == [
        ("Frank", "Lamp"), ("Frank", "Mouse"), ("John", "Computer"), ("John", "Desk")]
