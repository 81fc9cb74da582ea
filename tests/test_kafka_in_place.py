"""Kafka stream sources read in place (``stored='false'``), against the real
broker the test session starts: the same rows and the same dead letters as
the stored source gives, run after run; a run killed after its query
committed and before its dead letters were written, or after its output
commit, loses and duplicates nothing."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from engine.faults import KillPoint
from engine.io import StepIO
from engine.kafka_topics import Record, add_partitions, create_topic, produce
from resources.warehouse import WarehouseResource
from runtime.runner import StepFailed, run_pipeline
from splice.compile import compile_path
from tests.crash_harness import Kill, run_killed
from tests.pipeline_helpers import make_io, output_rows
from tests.test_kafka_source import ts

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

INTERVAL = """
CREATE STREAM orders (id INT, item STRING, ts TIMESTAMP)
  WITH (format='kafka', topic='{orders}', key='id', timestamp='ts'{stored});
CREATE STREAM payments (order_id INT, amount INT, ts TIMESTAMP)
  WITH (format='kafka', topic='{payments}', key='order_id', timestamp='ts'{stored});
INSERT INTO {out} SELECT STREAM o.id, o.item, p.amount
FROM orders o LEFT JOIN payments p WITHIN 1 MINUTE ON p.order_id = o.id;
"""
IN_PLACE = ", stored='false'"


def _topics(kafka: str, partitions: int = 2) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    names = (f"ip-orders-{tag}", f"ip-payments-{tag}")
    for name in names:
        create_topic(kafka, name, partitions)
    return names


def _io(spark: Any, warehouse: Any, sql: str, name: str, kafka: str) -> StepIO:
    io = make_io(spark, warehouse, sql, name=name)
    return StepIO(spark=io.spark, warehouse=io.warehouse, pipeline=io.pipeline,
                  kafka_bootstrap=kafka)


def _round(kafka: str, orders: str, payments: str, first: int) -> None:
    """Orders ``first`` to ``first + 5``, a payment for each even one, and
    bad records on both topics, in both partitions, among the good ones."""
    ids = range(first, first + 6)
    produce(kafka, orders, [
        *[Record({"id": i, "item": f"i{i}", "ts": ts(10 * i)}, str(i), partition=i % 2)
          for i in ids],
        Record('{"id": 1, "item": ', "1", partition=0),
        Record({"id": "two", "item": "x", "ts": ts(10 * first)}, "2", partition=1),
        Record({"id": first, "item": "late"}, str(first), partition=1),  # no event time
        Record(None, "7", partition=0),  # a null value on a stream: skipped
    ])
    produce(kafka, payments, [
        *[Record({"order_id": i, "amount": i * 10, "ts": ts(10 * i + 5)}, str(i),
                 partition=i % 2) for i in ids if i % 2 == 0],
        Record("not json", "0", partition=1),
    ])


def _dead(spark: Any, warehouse: Any, name: str) -> list[tuple[Any, ...]]:
    rows = []
    for source in ("orders", "payments"):
        table = spark.read.format("delta").load(warehouse.dead_letter_path(name, source))
        rows += [(r["source"], r["topic"], r["partition"], r["offset"], r["record"],
                  r["reason"], r["record_encoding"]) for r in table.collect()]
    return sorted(rows)


def test_an_interval_join_read_in_place_gives_the_stored_rows_and_dead_letters(
        spark, warehouse, kafka) -> None:
    orders, payments = _topics(kafka)
    both = {"orders": orders, "payments": payments}
    stored = _io(spark, warehouse, INTERVAL.format(**both, stored="", out="paid_s"),
                 "ipstored", kafka)
    in_place = _io(spark, warehouse, INTERVAL.format(**both, stored=IN_PLACE, out="paid_r"),
                   "ipread", kafka)
    for n, first in enumerate((0, 6)):
        _round(kafka, orders, payments, first)
        if n:  # a partition added between runs is read in place too
            add_partitions(kafka, orders, 3)
            produce(kafka, orders, [Record({"id": 40, "item": "new", "ts": ts(120)}, "40",
                                           partition=2),
                                    Record("[1]", "41", partition=2)])
        run_pipeline(stored.pipeline, stored)
        reports = {r.step_id: r for r in run_pipeline(in_place.pipeline, in_place)}
        expected = output_rows(stored, "paid_s", "id", "item", "amount")
        assert expected and output_rows(in_place, "paid_r", "id", "item", "amount") == expected
        dead = _dead(spark, warehouse, "ipstored")
        assert len(dead) == [4, 9][n]
        assert _dead(spark, warehouse, "ipread") == dead
        # This run's dead letters are counted by the step that read them.
        assert reports["paid_r"].dead_letters == [4, 5][n]
        assert reports["orders"].rows_written == reports["payments"].rows_written == 0
    # Nothing new: the step is not run again, and writes nothing twice.
    reports = {r.step_id: r for r in run_pipeline(in_place.pipeline, in_place)}
    assert reports["paid_r"].skipped
    assert len(_dead(spark, warehouse, "ipread")) == 9


def test_a_stream_table_join_reads_its_stream_side_in_place_through_a_repartition(
        spark, warehouse, kafka) -> None:
    orders, customers = _topics(kafka, partitions=1)
    sql = (f"CREATE STREAM orders (id INT, customer_id INT, ts TIMESTAMP) WITH "
           f"(format='kafka', topic='{orders}', key='id', timestamp='ts', stored='false');\n"
           f"CREATE TABLE customers (id INT, name STRING) WITH (format='kafka', "
           f"topic='{customers}', key='id');\n"
           "INSERT INTO named SELECT STREAM o.id, c.name FROM orders o "
           "LEFT JOIN customers c ON c.id = o.customer_id;\n")
    io = _io(spark, warehouse, sql, "iplookup", kafka)
    produce(kafka, customers, [Record({"id": 1, "name": "Ann"}, "1")])
    run_pipeline(io.pipeline, io)
    produce(kafka, orders, [Record({"id": 10, "customer_id": 1, "ts": ts(1)}, "10"),
                            Record({"id": 11, "customer_id": 2, "ts": ts(2)}, "11"),
                            Record({"id": 12, "customer_id": "x", "ts": ts(3)}, "12")])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert output_rows(io, "named", "id", "name") == [(10, "Ann"), (11, None)]
    # The step that reads the topic (the repartition by customer) counts them.
    assert reports["orders_by_customer_id"].dead_letters == 1
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("iplookup", "orders"))
    assert [(r["offset"], r["reason"]) for r in dead.collect()] == [
        (2, "column 'customer_id': 'x' is not INT")]


def test_skipping_lost_records_needs_the_stored_source(spark, warehouse, kafka) -> None:
    orders, payments = _topics(kafka)
    io = _io(spark, warehouse, INTERVAL.format(orders=orders, payments=payments,
                                               stored=IN_PLACE, out="paid"), "ipskip", kafka)
    io = StepIO(spark=io.spark, warehouse=io.warehouse, pipeline=io.pipeline,
                kafka_bootstrap=kafka, kafka_lost_records="skip")
    _round(kafka, orders, payments, 0)
    with pytest.raises(StepFailed, match=r"read in place \(stored='false'\), and "
                       r"SPLICE_KAFKA_LOST_RECORDS=skip needs the source's own step"):
        run_pipeline(io.pipeline, io)


@pytest.mark.faults
@pytest.mark.parametrize("point", [KillPoint.READ_IN_PLACE, KillPoint.OUTPUT_COMMITTED])
def test_a_reading_step_killed_loses_and_duplicates_no_row_or_dead_letter(
        spark, tmp_path: Path, kafka: str, point: KillPoint) -> None:
    """Killed after its query committed, before the dead letters were
    written (their observation is lost with the run): the rerun reads the
    committed micro-batch's whole range again for them. Killed after the
    output commit, before the checkpoint's: the rerun replays the
    micro-batch, writing neither its rows nor its dead letters twice."""
    orders, payments = _topics(kafka)
    reference = _io(spark, WarehouseResource(root=str(tmp_path / "reference")),
                    INTERVAL.format(orders=orders, payments=payments, stored="", out="paid_s"),
                    "ipkill", kafka)
    sql = tmp_path / "ipkill.sql"
    sql.write_text(INTERVAL.format(orders=orders, payments=payments, stored=IN_PLACE,
                                   out="paid"))
    pipeline = compile_path(sql)
    warehouse = WarehouseResource(root=str(tmp_path / "warehouse"))
    io = StepIO(spark=spark, warehouse=warehouse, pipeline=pipeline, kafka_bootstrap=kafka)
    _round(kafka, orders, payments, 0)
    run_killed(io, Kill(point, "paid"), sql, env={"SPLICE_KAFKA_BOOTSTRAP": kafka})
    run_pipeline(pipeline, io)
    _round(kafka, orders, payments, 6)
    run_pipeline(pipeline, io)
    run_pipeline(reference.pipeline, reference)
    expected = output_rows(reference, "paid_s", "id", "item", "amount")
    assert expected and output_rows(io, "paid", "id", "item", "amount") == expected
    reference_dead = _dead(spark, reference.warehouse, "ipkill")
    assert len(reference_dead) == 8
    assert _dead(spark, warehouse, "ipkill") == reference_dead
