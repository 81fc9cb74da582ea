"""Kafka topics as sources, against the real broker the test session starts:
the rows a pipeline gives over topics equal those over Delta tables; bad
records go to the dead letter with where they were; tombstones delete."""

from __future__ import annotations

import random
import socket
import time
import uuid
from datetime import datetime
from typing import Any

import pytest
from splice.engine.io import StepIO
from splice.engine.kafka_topics import Record, add_partitions, create_topic, produce
from splice.engine.settings import SpliceSettings
from splice.operators import kafka_source
from splice.runtime.runner import StepFailed, run_pipeline
from splice.runtime.workspace import Workspace

from tests.helpers.pipeline import append, make_io, output_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

T0 = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC, in ms


def topic(prefix: str, partitions: int = 1, bootstrap: str = "") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name, partitions)
    return name


def ts(seconds: int) -> str:
    return datetime.utcfromtimestamp(T0 / 1000 + seconds).strftime("%Y-%m-%d %H:%M:%S")


def kafka_io(spark: Any, warehouse: Any, sql: str, name: str, bootstrap: str) -> StepIO:
    io = make_io(spark, warehouse, sql, name=name)
    return Workspace(io.pipeline, SpliceSettings.from_env(kafka_bootstrap=bootstrap),
                     warehouse=io.warehouse, spark=io.spark).io


def records(rows: list[dict[str, Any]], key: str | None = "id") -> list[Record]:
    return [Record(value=r, key=None if key is None else str(r[key])) for r in rows]


def stamped(rows: list[dict[str, Any]]) -> list[Record]:
    """Records keyed by ``id``, stamped a second apart from 2024-01-01."""
    return [Record(r, str(r["id"]), timestamp_ms=T0 + 1000 * i) for i, r in enumerate(rows)]


def orders_sql(name: str) -> str:
    """Orders (id, item, ts) on topic ``name``, straight into ``result``."""
    return (f"CREATE STREAM orders (id INT, item STRING, ts TIMESTAMP) WITH (format='kafka', "
            f"topic='{name}', key='id', timestamp='ts');\n"
            "INSERT INTO result SELECT STREAM id, item FROM orders;")


STREAM_TABLE = """
CREATE STREAM orders (id INT, customer_id INT, item STRING, ts TIMESTAMP)
  WITH ({orders}, key='id', timestamp='ts');
CREATE TABLE customers (id INT, name STRING, ts TIMESTAMP)
  WITH ({customers}, key='id', timestamp='ts');
INSERT INTO {out} SELECT STREAM o.id, o.item, c.name
FROM orders o LEFT JOIN customers c ON c.id = o.customer_id;
"""

CUSTOMERS = [{"id": 1, "name": "Ann", "ts": ts(0)}, {"id": 2, "name": "Bob", "ts": ts(1)}]
ORDERS = [{"id": 10, "customer_id": 1, "item": "pen", "ts": ts(5)},
          {"id": 11, "customer_id": 2, "item": "ink", "ts": ts(6)},
          {"id": 12, "customer_id": 3, "item": "cap", "ts": ts(7)}]
MORE_ORDERS = [{"id": 13, "customer_id": 2, "item": "pad", "ts": ts(9)}]


def test_stream_table_join_over_kafka_equals_delta_and_runs_incrementally(
        spark, warehouse, kafka) -> None:
    orders, customers = topic("orders", 2, kafka), topic("customers", 1, kafka)
    over_kafka = kafka_io(spark, warehouse, STREAM_TABLE.format(
        orders=f"format='kafka', topic='{orders}'",
        customers=f"kafka_topic='{customers}', value_format='JSON'", out="result_k"), "k",
        kafka)
    over_delta = make_io(spark, warehouse, STREAM_TABLE.format(
        orders="location='orders'", customers="location='customers'", out="result"), name="d")

    produce(kafka, customers, records(CUSTOMERS))
    produce(kafka, orders, records(ORDERS))
    append(over_delta, "customers", CUSTOMERS)
    append(over_delta, "orders", ORDERS)
    run_pipeline(over_kafka.pipeline, over_kafka)
    run_pipeline(over_delta.pipeline, over_delta)
    expected = [(10, "pen", "Ann"), (11, "ink", "Bob"), (12, "cap", None)]
    assert output_rows(over_delta, "result", "id", "item", "name") == expected
    assert output_rows(over_kafka, "result_k", "id", "item", "name") == expected

    # A second run reads only what arrived since: every record once.
    produce(kafka, orders, records(MORE_ORDERS))
    append(over_delta, "orders", MORE_ORDERS)
    run_pipeline(over_kafka.pipeline, over_kafka)
    run_pipeline(over_delta.pipeline, over_delta)
    expected.insert(3, (13, "pad", "Bob"))
    assert output_rows(over_kafka, "result_k", "id", "item", "name") == expected
    assert output_rows(over_delta, "result", "id", "item", "name") == expected
    # A run with nothing new is skipped (the topics' end offsets did not move).
    reports = run_pipeline(over_kafka.pipeline, over_kafka)
    assert all(r.skipped for r in reports)
    assert output_rows(over_kafka, "result_k", "id", "item", "name") == expected


def test_records_stamped_long_ago_are_all_read(spark, warehouse, kafka) -> None:
    """Records keep their event time (here 2024) as their Kafka timestamp.
    The suite's broker checks retention every second: were it deleting by
    time, as Kafka's 7-day default does by those timestamps, the records
    would be gone before the run (a whole suite's run once lost a case's
    records between planning a micro-batch and reading it)."""
    orders = topic("old", 1, kafka)
    sql = orders_sql(orders)
    io = kafka_io(spark, warehouse, sql, "old", kafka)
    produce(kafka, orders, stamped(ORDERS))
    time.sleep(2.5)  # two retention checks at least
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "item") == [(10, "pen"), (11, "ink"), (12, "cap")]


def test_bad_records_go_to_dead_letter_with_topic_partition_offset(
        spark, warehouse, kafka) -> None:
    orders = topic("bad", 1, kafka)
    sql = orders_sql(orders)
    io = kafka_io(spark, warehouse, sql, "dead", kafka)
    produce(kafka, orders, [
        Record({"id": 1, "item": "pen", "ts": ts(1)}, "1"),
        Record('{"id": 2, "item": ', "2"),
        Record({"id": "two", "item": "ink", "ts": ts(2)}, "2"),
        Record({"id": 3, "item": "cap"}, "3"),
        Record({"id": 4, "item": "pad", "ts": ts(4)}, "four"),
        Record(None, "5"),  # a null value on a stream: skipped
        Record({"item": "mug", "ts": ts(6)}, "6"),  # the key column from the key
        # not JSON objects, each for its own reason (issue 56)
        Record('{"id": 7, "id": 8}', "7"),
        Record('\ufeff{"id": 8}', "8"),
        Record('{"id": 9, "item": "\\ud800"}', "9"),
        Record('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "10"),
    ])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert output_rows(io, "result", "id", "item") == [(1, "pen"), (6, "mug")]
    assert reports["orders"].dead_letters == 8
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("dead", "orders"))
    assert sorted((r["topic"], r["partition"], r["offset"], r["reason"])
                  for r in dead.collect()) == [
        (orders, 0, 1, "not a JSON object"),
        (orders, 0, 2, "column 'id': 'two' is not INT"),
        (orders, 0, 3, "missing event time 'ts'"),
        (orders, 0, 4, "key 'four' is not INT (key format KAFKA)"),
        (orders, 0, 7, "duplicate key 'id'"),
        (orders, 0, 8, "byte order mark before the JSON object"),
        (orders, 0, 9, "invalid escape \\ud800 (a lone surrogate)"),
        (orders, 0, 10, "nested deeper than 1000 levels"),
    ]
    assert {r["record"] for r in dead.collect() if r["offset"] == 1} == {'{"id": 2, "item": '}


def test_dead_letters_read_again_from_their_range_hold_the_bad_records_alone(
        spark, warehouse, kafka) -> None:
    """The micro-batch is written in one pass that observes where its bad
    records lie (the first and last by partition and offset) and only that
    range is read again for the dead letters: bad records in two partitions
    with good ones around and between them give every good row once in the
    output and the bad ones alone in the dead letter."""
    orders = topic("range", 3, kafka)
    io = kafka_io(spark, warehouse, orders_sql(orders), "range", kafka)
    good = {p: [{"id": 10 * p + o, "item": f"i{p}{o}", "ts": ts(10 * p + o)} for o in range(5)]
            for p in range(3)}
    bad = {(0, 2): '{"id": 2, "item": "x", "ts": "' + ts(2) + '"} extra',
           (2, 1): '{"id": 21, "item": "y"}'}
    records_of = {p: [Record(r, str(r["id"]), partition=p) for r in good[p]] for p in range(3)}
    for (p, offset), value in bad.items():  # the bad record at that offset
        records_of[p].insert(offset, Record(value, "0", partition=p))
    batch = [r for p in range(3) for r in records_of[p]]
    produce(kafka, orders, batch)
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert sorted(output_rows(io, "result", "id", "item")) == sorted(
        (r["id"], r["item"]) for rows in good.values() for r in rows)
    assert reports["orders"].dead_letters == 2
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("range", "orders"))
    assert sorted((r["partition"], r["offset"], r["record"], r["reason"])
                  for r in dead.collect()) == [
        (0, 2, bad[(0, 2)], "trailing characters after the JSON object"),
        (2, 1, bad[(2, 1)], "missing event time 'ts'"),
    ]


def test_columns_named_like_a_records_fields_are_the_values_own(spark, warehouse,
                                                                 kafka) -> None:
    """A value's ``key``, ``value``, ``topic``, ``partition``, ``offset`` and
    ``timestamp`` are the declared columns, never the Kafka record's own."""
    events = topic("fields", 1, kafka)
    sql = (f"CREATE STREAM events (key STRING, value INT, topic STRING, partition INT, "
           f"offset BIGINT, timestamp TIMESTAMP) WITH (format='kafka', topic='{events}', "
           "timestamp='timestamp');\n"
           "INSERT INTO result SELECT STREAM key, value, topic, partition, offset, timestamp "
           "FROM events;")
    io = kafka_io(spark, warehouse, sql, "fields", kafka)
    produce(kafka, events, [
        Record({"key": "k1", "value": 7, "topic": "mine", "partition": 9, "offset": 90,
                "timestamp": ts(3)}, "record-key"),
        Record({"key": "k2", "value": "eight", "topic": "mine", "partition": 9, "offset": 91,
                "timestamp": ts(4)}, "record-key"),
    ])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    rows = output_rows(io, "result", "key", "value", "topic", "partition", "offset",
                       "timestamp")
    assert rows == [("k1", 7, "mine", 9, 90, datetime(2024, 1, 1, 0, 0, 3))]
    assert reports["events"].dead_letters == 1
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("fields", "events"))
    assert [(r["topic"], r["partition"], r["offset"], r["reason"]) for r in dead.collect()] == [
        (events, 0, 1, "column 'value': 'eight' is not INT")]


def test_tombstone_on_a_table_topic_deletes_its_key(spark, warehouse, kafka) -> None:
    customers, orders = topic("tomb", 1, kafka), topic("tomb-orders", 1, kafka)
    sql = (f"CREATE TABLE customers (id INT PRIMARY KEY, name STRING) WITH ("
           f"kafka_topic='{customers}', value_format='JSON');\n"
           f"CREATE STREAM orders (id INT KEY, customer_id INT) WITH (kafka_topic='{orders}', "
           "value_format='JSON', key_format='JSON');\n"
           "CREATE STREAM result AS SELECT o.id, c.name FROM orders o "
           "LEFT JOIN customers c ON c.id = o.customer_id EMIT CHANGES;")
    io = kafka_io(spark, warehouse, sql, "tomb", kafka)
    produce(kafka, customers, [Record({"id": 1, "name": "Ann"}, "1"),
                               Record({"id": 2, "name": "Bob"}, "2")])
    produce(kafka, orders, [Record({"customer_id": 1}, "1")])
    run_pipeline(io.pipeline, io)
    # The tombstone of customer 1, on its own: no value, the key from the record key.
    produce(kafka, customers, [Record(None, "1"), Record({"id": 2, "name": "Bea"}, "2"),
                               Record({"name": "Nobody"}), Record(None)])
    produce(kafka, orders, [Record({"customer_id": 1}, "2"), Record({"customer_id": 2}, "3")])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "name") == [(1, "Ann"), (2, None), (3, "Bea")]
    table = spark.read.format("delta").load(io.table_path(io.pipeline.step("customers_table")))
    assert sorted((r["_key"], r["name"]) for r in table.collect()) == [(2, "Bea")]
    # A record without any key, a value or a tombstone, cannot be put in the table.
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("tomb", "customers"))
    assert sorted((r["offset"], r["reason"]) for r in dead.collect()) == [
        (4, "missing key: the record has no key and its value no key column"),
        (5, "missing key: the record has no key and its value no key column")]


def test_many_updates_of_a_key_in_one_run_leave_its_last(spark, warehouse, kafka) -> None:
    """A table topic's records reach its table in each key's offset order,
    however many a run holds: 60 random updates and tombstones of 6 keys
    over 3 partitions (a key's records in one partition, by its key), 40 in
    one run and 20 in the next, leave each key's last record, as one record
    per run would; a table query over it follows, deletions included."""
    rng = random.Random(2)
    customers = topic("many", 3, kafka)
    sql = (f"CREATE TABLE customers (id INT PRIMARY KEY, name STRING) WITH ("
           f"kafka_topic='{customers}', value_format='JSON');\n"
           "CREATE TABLE named AS SELECT id, name FROM customers WHERE name <> 'x0';")
    io = kafka_io(spark, warehouse, sql, "many", kafka)
    last: dict[int, str | None] = {}
    for count in (40, 20):
        batch = []
        for _ in range(count):
            key = rng.randrange(6)
            name = None if rng.random() < 0.2 else f"x{rng.randrange(5)}"
            batch.append(Record(None if name is None else {"id": key, "name": name}, str(key)))
            last[key] = name
        produce(kafka, customers, batch)
        run_pipeline(io.pipeline, io)
        expected = sorted((k, v) for k, v in last.items() if v is not None)
        table = io.read_table("customers_table").collect()
        assert sorted((r["_key"], r["name"]) for r in table) == expected
        assert output_rows(io, "named", "id", "name") == [
            (k, v) for k, v in expected if v != "x0"]
        # after each run a key deleted and a row the query leaves out: the seed covers both
        assert None in last.values() and "x0" in last.values()
    # the materialization reads the topic's table one file per micro-batch:
    # each run's records are in one file, by partition and offset
    files = _files(spark, io, "customers")
    assert sorted(len(f) for f in files) == [20, 40] and all(f == sorted(f) for f in files)


def _files(spark: Any, io: StepIO, source: str) -> list[list[tuple[int, int]]]:
    """The (partition, offset) of each record of ``source``'s table, file by
    file, each file's in its stored order."""
    stored = spark.read.format("delta").load(io.table_path(io.pipeline.step(source)))
    files: dict[str, list[tuple[int, int]]] = {}
    for r in stored.select("_metadata.file_path", "__partition", "__offset").collect():
        files.setdefault(r["file_path"], []).append((r["__partition"], r["__offset"]))
    return sorted(files.values())


def test_a_stream_read_in_no_order_is_written_a_file_per_partition(
        spark, warehouse, kafka) -> None:
    """A micro-batch of a topic of 3 partitions that no step reads in
    arrival order is written a file per partition, side by side, each in
    its offset order (the one-file write of a table topic's is
    ``test_many_updates_of_a_key_in_one_run_leave_its_last``), and the rows
    are all there once."""
    orders = topic("files", 3, kafka)
    io = kafka_io(spark, warehouse, orders_sql(orders), "files", kafka)
    rows = [{"id": i, "item": f"i{i}", "ts": ts(i)} for i in range(30)]
    produce(kafka, orders, [Record(r, str(r["id"]), partition=r["id"] % 3) for r in rows])
    run_pipeline(io.pipeline, io)
    assert _files(spark, io, "orders") == [[(p, o) for o in range(10)] for p in range(3)]
    assert sorted(output_rows(io, "result", "id", "item")) == [(r["id"], r["item"]) for r in rows]


def test_a_partition_added_between_runs_is_read(spark, warehouse, kafka) -> None:
    orders = topic("grow", 1, kafka)
    sql = (f"CREATE SOURCE orders (id INT, item STRING) WITH (connector='kafka', "
           f"topic='{orders}', properties.bootstrap.server='{kafka}', "
           "scan.startup.mode='earliest') FORMAT PLAIN ENCODE JSON;\n"
           "INSERT INTO result SELECT STREAM id, item FROM orders;")
    io = make_io(spark, warehouse, sql, name="grow")  # brokers from the statement
    produce(kafka, orders, [Record({"id": 1, "item": "pen"}, partition=0)])
    run_pipeline(io.pipeline, io)
    add_partitions(kafka, orders, 3)
    produce(kafka, orders, [Record({"id": 2, "item": "ink"}, partition=1),
                            Record({"id": 3, "item": "cap"}, partition=2),
                            Record({"id": 4, "item": "pad"}, partition=0)])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "item") == [
        (1, "pen"), (2, "ink"), (3, "cap"), (4, "pad")]


STREAM_STREAM = """
CREATE STREAM orders (id INT, item STRING, ts TIMESTAMP) WITH ({orders}, timestamp='ts');
CREATE STREAM payments (id INT, amount INT, ts TIMESTAMP) WITH ({payments}, timestamp='ts');
CREATE STREAM {out} AS SELECT o.id, o.item, p.amount
FROM orders o LEFT JOIN payments p WITHIN 1 MINUTE ON p.id = o.id;
"""

ORDERS_SS = [{"id": 1, "item": "pen", "ts": ts(0)}, {"id": 2, "item": "ink", "ts": ts(10)},
             {"id": 3, "item": "cap", "ts": ts(20)}]
PAYMENTS_SS = [{"id": 1, "amount": 5, "ts": ts(30)}, {"id": 2, "amount": 7, "ts": ts(200)},
               {"id": 4, "amount": 9, "ts": ts(300)}]


def test_stream_stream_join_over_kafka_equals_delta(spark, warehouse, kafka) -> None:
    orders, payments = topic("ss-orders", 2, kafka), topic("ss-payments", 2, kafka)
    over_kafka = kafka_io(spark, warehouse, STREAM_STREAM.format(
        orders=f"kafka_topic='{orders}', value_format='JSON'",
        payments=f"kafka_topic='{payments}', value_format='JSON'", out="ss_k"), "ssk", kafka)
    over_delta = make_io(spark, warehouse, STREAM_STREAM.format(
        orders="location='orders'", payments="location='payments'", out="ss"), name="ssd")
    for rows, name, source in ((ORDERS_SS, orders, "orders"),
                               (PAYMENTS_SS, payments, "payments")):
        produce(kafka, name, records(rows, key=None))
        append(over_delta, source, rows)
    run_pipeline(over_kafka.pipeline, over_kafka)
    run_pipeline(over_delta.pipeline, over_delta)
    delta_rows = output_rows(over_delta, "ss", "id", "item", "amount")
    # Order 1 matched; orders 2 and 3 closed unmatched once payment 4 moved time past them.
    assert delta_rows == [(1, "pen", 5), (2, "ink", None), (3, "cap", None)]
    assert output_rows(over_kafka, "ss_k", "id", "item", "amount") == delta_rows


def test_a_port_that_is_no_broker_stops_the_run_at_once_and_one_live_broker_is_enough(
        spark, warehouse, kafka, monkeypatch) -> None:
    """A run pointed at a port that accepts connections but is no Kafka
    broker stops in one message naming it (Spark's client would wait
    minutes for a node assignment); a list with a dead address and the
    live broker runs."""
    orders = topic("port", 1, kafka)
    sql = orders_sql(orders)
    produce(kafka, orders, records(ORDERS))
    monkeypatch.setattr(kafka_source, "ANSWER_SECONDS", 2.0)
    with socket.create_server(("127.0.0.1", 0)) as other:
        port = f"127.0.0.1:{other.getsockname()[1]}"
        io = kafka_io(spark, warehouse, sql, "port", port)
        with pytest.raises(StepFailed) as failed:
            run_pipeline(io.pipeline, io)
    assert str(failed.value).startswith(
        f"step 'orders' (source, from port.sql:1:1) failed: source 'orders' (declared at "
        f"port.sql:1:1) reads Kafka topic '{orders}' at {port}, which accepts a connection but "
        "does not answer as a Kafka broker within 2 s"), str(failed.value)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    io = kafka_io(spark, warehouse, sql, "port", f"{dead},{kafka}")
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "item") == [(10, "pen"), (11, "ink"), (12, "cap")]
