"""Outputs written to Kafka topics (``CREATE STREAM|TABLE name WITH
(kafka_topic=...) AS SELECT``), against the session's broker: the records
on the topic, read back with Spark's Kafka source, are the output's rows
(a stream) or its changes with tombstones (a table); a killed run loses no
record."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from splice.engine.faults import KillPoint
from splice.engine.kafka_topics import topic_config
from splice.engine.settings import SpliceSettings
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path, compile_text
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace
from splice.sql.errors import SqlErrors

from tests.helpers.crash_harness import Kill, run_killed
from tests.helpers.kafka import consumed
from tests.helpers.pipeline import append, make_io


def topic_records(spark: Any, bootstrap: str, topic: str) -> list[tuple]:
    """(key, value as a dict or None) of every record on ``topic``, in offset
    order per partition."""
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v",
                        "partition", "offset").orderBy("partition", "offset").collect())
    return [(r["k"], None if r["v"] is None else json.loads(r["v"])) for r in rows]


def _errors(sql: str) -> list[str]:
    with pytest.raises(SqlErrors) as info:
        compile_text(sql, "p.sql", "p")
    return [e.render() for e in info.value.errors]


SOURCE = "CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');\n"


def test_an_output_with_no_topic_or_an_unknown_option_is_refused_where_written() -> None:
    assert _errors(SOURCE + "CREATE STREAM big WITH (location='x') AS SELECT id FROM orders;") \
        == ["p.sql:2:34: the WITH (...) of output 'big' names no Kafka topic; write "
            "CREATE STREAM big WITH (kafka_topic='big', value_format='JSON') AS SELECT ..., "
            "or drop the WITH (...) for an output in the warehouse only"]
    (error,) = _errors(SOURCE + "CREATE STREAM big WITH (kafka_topic='b', retention='1') "
                       "AS SELECT id FROM orders;")
    assert error.startswith("p.sql:2:52: option 'retention' is not one of an output topic's")
    # (AVRO and JSON_SR are written since issue 52's item 4:
    # tests/sql/test_kafka_sink_formats.py; a format not written is refused)
    (error,) = _errors(SOURCE + "CREATE STREAM big WITH (kafka_topic='b', "
                       "value_format='PROTOBUF') AS SELECT id FROM orders;")
    assert error.startswith("p.sql:2:55: value format 'PROTOBUF' is not supported")
    (error,) = _errors("CREATE STREAM big WITH (kafka_topic='b');")
    assert "needs a column list before WITH (...), or AS SELECT after it" in error


def test_explain_shows_the_sink() -> None:
    plan = compile_text(SOURCE + "CREATE TABLE n WITH (kafka_topic='n') AS "
                        "SELECT id, COUNT(*) AS c FROM orders GROUP BY id;", "p.sql", "p")
    sink = plan.step("n_topic")
    assert (sink.op, sink.inputs, sink.topic) == ("sink", ("n",), "n")
    props = plan.node("n_topic").explain().props
    assert props["topic"] == "n (compacted)"
    assert props["deleted key"] == "a tombstone (null value)"
    assert props["delivery"].startswith("exactly once (exactly_once_v2: one Kafka transaction")


@pytest.mark.spark
@pytest.mark.kafka
def test_a_stream_output_goes_to_its_topic_once_per_row(spark, warehouse, kafka) -> None:
    topic = f"big-{uuid.uuid4().hex[:8]}"
    io = make_io(spark, warehouse, SOURCE + (
        f"CREATE STREAM big WITH (kafka_topic='{topic}', value_format='JSON', partitions=2) "
        "AS SELECT id, item FROM orders WHERE id > 1 EMIT CHANGES;"), name="sink")
    append(io, "orders", [{"id": 1, "item": "pen"}, {"id": 2, "item": "ink"},
                          {"id": 3, "item": None}])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["big_topic"].rows_written == 2
    assert sorted(topic_records(spark, kafka, topic)) == [
        ("2", {"id": 2, "item": "ink"}), ("3", {"id": 3, "item": None})]
    append(io, "orders", [{"id": 4, "item": "cap"}])
    run_pipeline(io.pipeline, io)
    run_pipeline(io.pipeline, io)  # nothing new: nothing sent
    assert sorted(topic_records(spark, kafka, topic)) == [
        ("2", {"id": 2, "item": "ink"}), ("3", {"id": 3, "item": None}),
        ("4", {"id": 4, "item": "cap"})]
    sent = spark.read.format("delta").load(io.table_path(io.pipeline.step("big_topic")))
    assert sorted((r["_key"], r["value"]) for r in sent.collect()) == [
        ("2", '{"id":2,"item":"ink"}'), ("3", '{"id":3,"item":null}'),
        ("4", '{"id":4,"item":"cap"}')]


@pytest.mark.spark
@pytest.mark.kafka
def test_a_table_output_sends_its_changes_and_a_tombstone_for_a_deleted_key(
        spark, warehouse, kafka) -> None:
    topic = f"names-{uuid.uuid4().hex[:8]}"
    io = make_io(spark, warehouse, (
        "CREATE TABLE customers (id INT, name STRING) WITH (location='customers', key='id');\n"
        f"CREATE TABLE names WITH (format='kafka', topic='{topic}') AS "
        "SELECT id, UPPER(name) AS name FROM customers;"), name="tsink")
    append(io, "customers", [{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}])
    run_pipeline(io.pipeline, io)
    append(io, "customers", [{"id": 1, "name": None}, {"id": 2, "name": "bea"}])
    run_pipeline(io.pipeline, io)
    records = topic_records(spark, kafka, topic)
    assert sorted(records[:2]) == [("1", {"id": 1, "name": "ANN"}),
                                   ("2", {"id": 2, "name": "BOB"})]
    assert sorted(records[2:], key=repr) == [("1", None), ("2", {"id": 2, "name": "BEA"})]
    assert topic_config(kafka, topic)["cleanup.policy"] == "compact"


SINK_PIPELINE = """
CREATE STREAM orders (id INT, item STRING) WITH (format='json', location='orders', key='id');
CREATE STREAM copied WITH (kafka_topic='{topic}', value_format='JSON') AS
  SELECT id, item FROM orders;
"""


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.faults
# After the output commit, the rerun sends nothing again: the kill matrix's
# point, a second proof here (pytest -m faults_full).
@pytest.mark.parametrize(("guarantee", "point", "twice"), [
    ("exactly_once_v2", KillPoint.SINK_SENDING, False),
    ("exactly_once_v2", KillPoint.SINK_SENT, False),
    ("at_least_once", KillPoint.SINK_SENT, True),
    pytest.param("exactly_once_v2", KillPoint.OUTPUT_COMMITTED, False,
                 marks=pytest.mark.faults_full)])
def test_a_killed_sink_run_loses_no_record(spark, tmp_path: Path, kafka: str, guarantee: str,
                                           point: KillPoint, twice: bool) -> None:
    """Exactly once (the default): killed inside the micro-batch's Kafka
    transaction, the broker aborts it and the rerun sends it in a new one;
    killed after its commit, the rerun sends nothing: a read_committed
    consumer reads each record once, in order. At least once: killed once
    the broker has the batch, before the sink recorded it, the rerun sends
    it again."""
    topic = f"copied-{uuid.uuid4().hex[:8]}"
    sql = tmp_path / "sink.sql"
    sql.write_text(SINK_PIPELINE.format(topic=topic))
    warehouse = WarehouseResource(root=str(tmp_path / "warehouse"))
    pipeline = compile_path(sql)
    settings = SpliceSettings.from_env(kafka_bootstrap=kafka, processing_guarantee=guarantee)
    io = Workspace(pipeline, settings, warehouse=warehouse, spark=spark).io
    append(io, "orders", [{"id": i, "item": f"i{i}"} for i in range(5)])
    run_killed(io, Kill(point, "copied_topic"), sql,
               env={"SPLICE_KAFKA_BOOTSTRAP": kafka, "SPLICE_PROCESSING_GUARANTEE": guarantee})
    first = [(str(i), {"id": i, "item": f"i{i}"}) for i in range(5)]
    if point == KillPoint.SINK_SENDING:
        # The records reached the broker in the open transaction; the kill
        # left it open: the broker shows them to read_uncommitted only.
        assert consumed(kafka, topic, committed=False) == first
        assert consumed(kafka, topic) == []
    else:
        assert consumed(kafka, topic) == first

    run_pipeline(pipeline, io)  # the rerun
    append(io, "orders", [{"id": 5, "item": "i5"}])
    run_pipeline(pipeline, io)
    everything = [*first, ("5", {"id": 5, "item": "i5"})]
    got = consumed(kafka, topic)
    if twice:
        assert sorted(got) == sorted([*first, *everything])  # none missing, the batch twice
    else:
        assert got == everything  # once each, in the order written
    if point == KillPoint.SINK_SENDING:  # the aborted transaction's records are still there
        assert consumed(kafka, topic, committed=False) == [*first, *everything]
