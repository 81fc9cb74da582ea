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
from splice.engine.faults import KillPoint
from splice.engine.io import StepIO
from splice.engine.kafka_topics import Record, add_partitions, create_topic, produce
from splice.engine.settings import SpliceSettings
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path
from splice.runtime.runner import StepFailed, run_pipeline
from splice.runtime.workspace import Workspace

from tests.helpers.crash_harness import Kill, run_killed
from tests.helpers.pipeline import make_io, output_rows
from tests.operators.test_kafka_source import ts

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
    return Workspace(io.pipeline, SpliceSettings.from_env(kafka_bootstrap=kafka),
                     warehouse=io.warehouse, spark=io.spark).io


def _pair(spark: Any, warehouse: Any, kafka: str, name: str
          ) -> tuple[StepIO, StepIO, tuple[str, str]]:
    """The interval join over two new topics, stored (pipeline
    ``<name>_s``, output ``<name>_out_s``) and read in place (``<name>``,
    ``<name>_out``); the topics."""
    orders, payments = _topics(kafka)
    both = {"orders": orders, "payments": payments}
    stored = _io(spark, warehouse, INTERVAL.format(**both, stored="", out=f"{name}_out_s"),
                 f"{name}_s", kafka)
    in_place = _io(spark, warehouse, INTERVAL.format(**both, stored=IN_PLACE,
                                                     out=f"{name}_out"), name, kafka)
    return stored, in_place, (orders, payments)


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
    stored, in_place, (orders, payments) = _pair(spark, warehouse, kafka, "ipread")
    for n, first in enumerate((0, 6)):
        _round(kafka, orders, payments, first)
        if n:  # a partition added between runs is read in place too
            add_partitions(kafka, orders, 3)
            produce(kafka, orders, [Record({"id": 40, "item": "new", "ts": ts(120)}, "40",
                                           partition=2),
                                    Record("[1]", "41", partition=2)])
        run_pipeline(stored.pipeline, stored)
        reports = {r.step_id: r for r in run_pipeline(in_place.pipeline, in_place)}
        expected = output_rows(stored, "ipread_out_s", "id", "item", "amount")
        assert expected and output_rows(in_place, "ipread_out", "id", "item", "amount") == expected
        dead = _dead(spark, warehouse, "ipread_s")
        assert len(dead) == [4, 9][n]
        assert _dead(spark, warehouse, "ipread") == dead
        # This run's dead letters are counted by the step that read them.
        assert reports["ipread_out"].dead_letters == [4, 5][n]
        assert reports["orders"].rows_written == reports["payments"].rows_written == 0
    # Nothing new: the step is not run again, and writes nothing twice.
    reports = {r.step_id: r for r in run_pipeline(in_place.pipeline, in_place)}
    assert reports["ipread_out"].skipped
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
    io = Workspace(io.pipeline,
                   SpliceSettings.from_env(kafka_bootstrap=kafka, kafka_lost_records="skip"),
                   warehouse=io.warehouse, spark=io.spark).io
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
    io = Workspace(pipeline, SpliceSettings.from_env(kafka_bootstrap=kafka), warehouse=warehouse,
                   spark=spark).io
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


def test_dagster_checks_the_dead_letters_on_the_step_that_reads_in_place(
        spark, warehouse, kafka) -> None:
    """Materialized by Dagster: the reading step's asset carries the
    no_dead_letters check, with this run's count; the sources' assets do
    not (their steps write no rows)."""
    from dagster import AssetCheckSeverity, AssetKey, materialize
    from splice.orchestration.assets import build_assets
    from splice.resources.spark import SparkResource

    orders, payments = _topics(kafka)
    io = _io(spark, warehouse, INTERVAL.format(orders=orders, payments=payments,
                                               stored=IN_PLACE, out="paid"), "ipdagster", kafka)
    assets = build_assets(io.pipeline)
    resources = {"spark": SparkResource(kafka_bootstrap=kafka), "warehouse": warehouse}
    for first, dead in ((0, 4), (6, 4)):
        _round(kafka, orders, payments, first)
        result = materialize(assets, resources=resources)
        checks = {(e.asset_key, e.check_name): (e.passed, e.severity, e.metadata)
                  for e in result.get_asset_check_evaluations()}
        passed, severity, metadata = checks[(AssetKey(["ipdagster", "paid"]),
                                             "no_dead_letters")]
        assert (passed, severity, metadata["dead_letters"].value) == (
            False, AssetCheckSeverity.WARN, dead)
        assert not [k for k in checks if k[1] == "no_dead_letters" and k[0] != AssetKey(
            ["ipdagster", "paid"])]
        made = result.asset_materializations_for_node("ipdagster_steps")
        source = next(m for m in made if m.asset_key == AssetKey(["ipdagster", "orders"]))
        # No table of its own: no path, no row count; no files to check.
        assert source.metadata["rows_written"].value == 0
        assert "path" not in source.metadata and "dagster/row_count" not in source.metadata
        assert not [k for k in checks if k[0] == AssetKey(["ipdagster", "orders"])]
    assert len(_dead(spark, warehouse, "ipdagster")) == 8


def test_serve_writes_the_dead_letters_of_a_topic_read_in_place_as_it_goes(
        spark, warehouse, kafka) -> None:
    """Under ``splice serve`` the reading step's query runs for good: the
    dead letters of its micro-batches are written while it serves, not only
    when it stops, and the rows and dead letters equal the stored run's."""
    import threading
    import time

    from splice.runtime.serve import ServeOptions, serve

    stored, io, (orders, payments) = _pair(spark, warehouse, kafka, "ipserved")
    _round(kafka, orders, payments, 0)
    stop, started = threading.Event(), threading.Event()
    worker = threading.Thread(target=lambda: serve(
        io.pipeline, io, stop, on_started=started.set,
        options=ServeOptions(interval_s=0.5, report_every_s=60)))
    worker.start()
    try:
        assert started.wait(300), "serve did not start"
        assert len(_dead(spark, warehouse, "ipserved")) == 4  # its catch-up run's
        _round(kafka, orders, payments, 6)
        deadline = time.monotonic() + 300
        while len(_dead(spark, warehouse, "ipserved")) < 8 and time.monotonic() < deadline:
            time.sleep(1)
        assert len(_dead(spark, warehouse, "ipserved")) == 8, "no dead letters while serving"
    finally:
        stop.set()
        worker.join(120)
    assert not worker.is_alive(), "serve did not stop"
    run_pipeline(stored.pipeline, stored)
    run_pipeline(io.pipeline, io)  # what serve's last trigger left, if any
    expected = output_rows(stored, "ipserved_out_s", "id", "item", "amount")
    assert expected and output_rows(io, "ipserved_out", "id", "item", "amount") == expected
    assert _dead(spark, warehouse, "ipserved") == _dead(spark, warehouse, "ipserved_s")


def test_splice_run_says_which_sources_are_read_in_place(spark, tmp_path, kafka,
                                                         capsys) -> None:
    from splice.cli import main

    orders, payments = _topics(kafka)
    folder = tmp_path / "iprun"
    folder.mkdir()
    (folder / "iprun.sql").write_text(INTERVAL.format(orders=orders, payments=payments,
                                                      stored=IN_PLACE, out="paid"))
    _round(kafka, orders, payments, 0)
    assert main(["run", str(folder), "--warehouse", str(tmp_path / "warehouse")]) == 0
    out = capsys.readouterr().out
    assert "source      orders: read in place by the step that reads it" in out
    assert "join        paid: " in out and "rows written, 4 to dead letter" in out
    summary = out[out.index("summary"):]
    assert [line.split()[0] for line in summary.splitlines()
            if line.endswith("(read in place)")] == ["orders", "payments"]
    # Rebuilding the reading step reads the topics afresh: its source's dead
    # letters are rebuilt with it, not written twice.
    warehouse = WarehouseResource(root=str(tmp_path / "warehouse"))
    rows = spark.read.format("delta").load(warehouse.output_path("paid")).count()
    assert main(["run", str(folder), "--warehouse", warehouse.root, "--rebuild", "paid"]) == 0
    assert ("rebuilding 3 step(s) from their sources: orders, payments, paid"
            in capsys.readouterr().out)
    assert spark.read.format("delta").load(warehouse.output_path("paid")).count() == rows
    assert len(_dead(spark, warehouse, "iprun")) == 4


def test_records_deleted_unread_stop_the_reading_step_and_name_the_rebuild(
        spark, warehouse, kafka) -> None:
    """The broker deleted records the reading step had not read: its run
    stops with the source's words (topic, partition, offset, retention), and
    the way on is to rebuild the reader, since skipping them needs the
    stored source; the rebuild reads what the topic holds now."""
    from splice.engine.definitions import rebuild_targets

    from tests.helpers.kafka import delete_records

    orders = f"ip-lost-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, orders, 1)
    sql = (f"CREATE STREAM orders (id INT, item STRING) WITH (format='kafka', topic='{orders}', "
           "key='id', stored='false');\nINSERT INTO result SELECT STREAM id, item FROM orders;\n")
    io = _io(spark, warehouse, sql, "iplost", kafka)
    produce(kafka, orders, [Record({"id": i, "item": f"i{i}"}, str(i)) for i in range(3)])
    run_pipeline(io.pipeline, io)
    produce(kafka, orders, [Record({"id": i, "item": f"i{i}"}, str(i)) for i in (3, 4)])
    delete_records(kafka, orders, {0: 5})  # offsets 3 and 4 deleted unread
    produce(kafka, orders, [Record({"id": 5, "item": "i5"}, "5")])
    with pytest.raises(StepFailed) as failed:
        run_pipeline(io.pipeline, io)
    message = str(failed.value)
    assert message.startswith(f"step 'result' (project, from iplost.sql:2:1) failed: source "
                              f"'orders' cannot read topic '{orders}'"), message
    assert "the broker no longer has those records (its first record is now at offset 5)" \
        in message
    assert message.endswith("to go on without them, rebuild the step that reads the topic in "
                            "place (splice run PIPELINE --rebuild result), which reads what the "
                            "topic holds now, from its first offset"), message
    run_pipeline(io.pipeline, io, rebuild=rebuild_targets(io.pipeline, ["result"]))
    assert output_rows(io, "result", "id", "item") == [(5, "i5")]
