"""Records a user's broker deleted before a run read them (here by a 1 s
time retention and records stamped 2024): a run stops and says so; a run
with ``kafka_lost_records=skip`` goes on and writes each deleted range to
the source's dead letter, once, also when killed right after writing it,
and also when they go while ``splice serve`` reads the topic."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from dagster import materialize
from splice.engine.definitions import drop, rebuild_targets
from splice.engine.faults import KillPoint
from splice.engine.io import StepIO
from splice.engine.kafka_topics import Record, create_topic, delete_topic, first_offsets, produce
from splice.engine.settings import SpliceSettings
from splice.operators.kafka_gaps import Gap, record_gaps
from splice.orchestration.assets import build_assets
from splice.resources.spark import SparkResource
from splice.runtime.compile import compile_path
from splice.runtime.runner import StepFailed, run_pipeline
from splice.runtime.serve import ServeOptions, serve
from splice.runtime.workspace import Workspace

from tests.helpers.crash_harness import Kill, run_killed
from tests.helpers.kafka import delete_records, delete_unread, retention_ms
from tests.helpers.pipeline import output_rows
from tests.operators.test_kafka_source import ORDERS, T0, kafka_io, orders_sql, stamped, topic, ts

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

READ = [(10, "pen"), (11, "ink"), (12, "cap")]  # ORDERS, offsets 0 to 2
OLD = [Record({"id": 20 + i, "item": "old", "ts": ts(i)}, str(20 + i),
              timestamp_ms=T0 + 1000 * i) for i in range(2)]  # offsets 3 and 4
SKIPPED = ("lost: 2 record(s) at offsets 3 to 4 were deleted by the broker (the topic's "
           "retention) before Splice read them; skipped, as SPLICE_KAFKA_LOST_RECORDS=skip asks")


def _dead(spark, io) -> list[tuple]:
    path = io.warehouse.dead_letter_path(io.pipeline.name, "orders")
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(
        "source", "record", "reason", "topic", "partition", "offset").collect())


def _offsets(spark, io) -> list[int]:
    """The offsets in the source's table, in order."""
    stored = spark.read.format("delta").load(io.table_path(io.pipeline.step("orders")))
    return sorted(r["__offset"] for r in stored.collect())


def _order(n: int, item: str) -> Record:
    return Record({"id": n, "item": item, "ts": ts(n)}, str(n))


def test_records_deleted_before_a_run_read_them_stop_it_until_a_run_skips_them(
        spark, warehouse, kafka) -> None:
    """The run stops, nothing skipped, with a message naming the topic,
    partition and offset, the first offset the broker still has, the
    retention that deleted them and the setting that goes on without them,
    in place of the Kafka client's ``OffsetOutOfRangeException``. A run
    with ``skip`` (set on Dagster's resource) reads on; the range is one
    dead-letter row, counted among the run's dead letters (Dagster's
    ``no_dead_letters`` check fails), and neither the next run nor the range written
    again (a rerun after a kill, a broker that deleted more) adds a row."""
    orders = topic("lost", 1, kafka)
    io = kafka_io(spark, warehouse, orders_sql(orders), "lost", kafka)
    produce(kafka, orders, stamped(ORDERS))
    run_pipeline(io.pipeline, io)  # offsets 0 to 2 read
    assert delete_unread(kafka, orders, OLD) == {0: 5}  # offsets 3 and 4 deleted unread
    with pytest.raises(StepFailed) as failed:
        run_pipeline(io.pipeline, io)
    message = str(failed.value)
    assert message.startswith(f"step 'orders' (source, from lost.sql:1:1) failed: source "
                              f"'orders' cannot read topic '{orders}' partition 0 from offset 3:"
                              " the broker no longer has those records (its first record is "
                              "now at offset 5), deleted by the topic's retention "
                              "(cleanup.policy=delete, retention.ms=1000, "
                              "retention.bytes=-1; time retention goes by the records' "
                              "Kafka timestamps"), message
    assert "a longer retention.ms or retention.bytes" in message
    assert message.endswith("to go on without them, run with SPLICE_KAFKA_LOST_RECORDS=skip "
                            "(Dagster: SparkResource's kafka_lost_records), which writes each "
                            "deleted range to the source's dead letter"), message
    assert "FetchPosition" not in message and "\tat " not in message
    assert "OffsetOutOfRange" in failed.value.detail  # the whole text, for logs
    assert output_rows(io, "result", "id", "item") == READ

    retention_ms(kafka, orders, -1)  # what comes next stays
    produce(kafka, orders, [_order(13, "pad")])  # offset 5
    # This run through Dagster, as a deployment sets it: on its resource.
    result = materialize(build_assets(io.pipeline), resources={
        "spark": SparkResource(kafka_bootstrap=kafka, kafka_lost_records="skip"),
        "warehouse": warehouse})
    assert result.success
    [check] = [(c.passed, c.metadata["dead_letters"].value)
               for c in result.get_asset_check_evaluations()
               if c.check_name == "no_dead_letters" and c.asset_key.path[-1] == "orders"]
    assert check == (False, 1)  # the lost range, as the run's one dead letter
    assert output_rows(io, "result", "id", "item") == [*READ, (13, "pad")]
    lost = [("orders", None, SKIPPED, orders, 0, 3)]
    assert _dead(spark, io) == lost

    produce(kafka, orders, [_order(14, "box")])
    skipping = replace(io, kafka_lost_records="skip")
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, skipping)}
    assert reports["orders"].dead_letters == 0
    assert output_rows(io, "result", "id", "item") == [*READ, (13, "pad"), (14, "box")]
    assert _dead(spark, io) == lost

    # The same range found again, then found longer: still one row, the longer range.
    step, path = io.pipeline.step("orders"), io.warehouse.dead_letter_path("lost", "orders")
    record_gaps(spark, step, orders, [Gap(0, 3, 5)], path, 1)
    assert _dead(spark, io) == lost
    record_gaps(spark, step, orders, [Gap(0, 3, 6)], path, 1)
    assert _dead(spark, io) == [("orders", None, SKIPPED.replace("2 record(s) at offsets 3 to 4",
                                                                 "3 record(s) at offsets 3 to 5"),
                                 orders, 0, 3)]


def _killed_skipping_run(spark, warehouse, tmp_path: Path, kafka: str, name: str,
                         point: KillPoint) -> tuple[StepIO, str]:
    """A topic whose offsets 0 to 2 a run read and whose 3 and 4 the broker
    then deleted unread, offset 5 (``pad``) after them; ``splice run`` with
    ``skip`` killed (SIGKILL, JVM included) at ``point`` of the source.
    The pipeline's io and the topic."""
    orders = topic(name, 1, kafka)
    sql = tmp_path / "lost.sql"
    sql.write_text(orders_sql(orders))
    io = Workspace(compile_path(sql), SpliceSettings.from_env(kafka_bootstrap=kafka),
                   warehouse=warehouse, spark=spark).io
    produce(kafka, orders, stamped(ORDERS))
    run_pipeline(io.pipeline, io)
    assert delete_unread(kafka, orders, OLD) == {0: 5}
    retention_ms(kafka, orders, -1)
    produce(kafka, orders, [_order(13, "pad")])  # offset 5
    run_killed(io, Kill(point, "orders"), sql,
               env={"SPLICE_KAFKA_BOOTSTRAP": kafka, "SPLICE_KAFKA_LOST_RECORDS": "skip"})
    return io, orders


@pytest.mark.faults
def test_a_skipping_run_killed_after_writing_the_range_writes_it_once(
        spark, warehouse, tmp_path: Path, kafka) -> None:
    """``splice run`` with ``SPLICE_KAFKA_LOST_RECORDS=skip`` killed (SIGKILL,
    JVM included) right after its micro-batch wrote the lost range's
    dead-letter row, before it wrote its rows: the rerun runs that
    micro-batch again over the same range, leaves one row, and writes every
    record the broker still has, once."""
    io, orders = _killed_skipping_run(spark, warehouse, tmp_path, kafka, "lostkill",
                                      KillPoint.LOST_RECORDED)
    lost = [("orders", None, SKIPPED, orders, 0, 3)]
    assert _dead(spark, io) == lost  # written before the kill
    assert output_rows(io, "result", "id", "item") == READ
    run_pipeline(io.pipeline, replace(io, kafka_lost_records="skip"))
    assert _dead(spark, io) == lost
    assert output_rows(io, "result", "id", "item") == [*READ, (13, "pad")]
    assert first_offsets(kafka, orders) == {0: 5}


@pytest.mark.faults
def test_a_skipping_run_killed_after_its_rows_keeps_the_range_it_found(
        spark, warehouse, tmp_path: Path, kafka) -> None:
    """``splice run`` with ``skip`` killed (SIGKILL) after its micro-batch
    wrote the lost range and then its rows (the source's ingest commit);
    the broker then deletes the record that micro-batch had read too. The
    rerun runs the micro-batch again over the same range, where the broker
    now lacks one more record, but that record is in the source's table:
    the dead letter keeps the range the killed run found (it said offsets
    3 to 5 before the fix), and every record is in the result once."""
    io, orders = _killed_skipping_run(spark, warehouse, tmp_path, kafka, "lostrows",
                                      KillPoint.SOURCE_INGESTED)
    lost = [("orders", None, SKIPPED, orders, 0, 3)]
    assert _dead(spark, io) == lost
    assert _offsets(spark, io) == [0, 1, 2, 5]
    delete_records(kafka, orders, {0: 6})  # what the killed run read, gone too
    assert first_offsets(kafka, orders) == {0: 6}
    run_pipeline(io.pipeline, replace(io, kafka_lost_records="skip"))
    assert _dead(spark, io) == lost
    assert output_rows(io, "result", "id", "item") == [*READ, (13, "pad")]


def test_a_topic_created_again_is_not_skipped_past(spark, warehouse, kafka) -> None:
    """A topic deleted and created again ends before where the checkpoint
    reads on: going on would skip its new records too (Spark's
    ``failOnDataLoss=false`` would), so a run stops, ``skip`` or not, and
    says how to read the topic afresh (not "deleted by retention"); the
    rebuild it names reads what the topic holds now."""
    orders = topic("again", 1, kafka)
    io = kafka_io(spark, warehouse, orders_sql(orders), "again", kafka)
    produce(kafka, orders, stamped(ORDERS))
    run_pipeline(io.pipeline, io)  # offsets 0 to 2 read
    delete_topic(kafka, orders)
    deadline = time.monotonic() + 30
    while True:  # the broker finishes a deletion in the background
        try:
            create_topic(kafka, orders, 1)
            break
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    produce(kafka, orders, [_order(13, "pad")])  # offset 0 of the new topic
    for policy in ("fail", "skip"):
        with pytest.raises(StepFailed) as failed:
            run_pipeline(io.pipeline, replace(io, kafka_lost_records=policy))
        assert str(failed.value) == (
            f"step 'orders' (source, from again.sql:1:1) failed: source 'orders' cannot read "
            f"topic '{orders}' on: partition 0 ends at offset 1, before offset 3 where its "
            "checkpoint reads on, so the topic was deleted and created again (or its log cut "
            "back, as an unclean leader election does); going on would skip its new records. "
            "Read the topic afresh: splice "
            "run PIPELINE --rebuild orders (the source and every step after it are rebuilt)"
        ), policy
    assert output_rows(io, "result", "id", "item") == READ
    drop(io.pipeline, io, rebuild_targets(io.pipeline, ["orders"]))  # what --rebuild does
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "id", "item") == [(13, "pad")]  # what the topic holds


def test_records_deleted_while_serve_reads_the_topic_are_written_down(
        spark, warehouse, kafka) -> None:
    """Under ``splice serve`` the source's query runs for good, so records
    the broker deletes between two of its micro-batches are found by the
    micro-batch, not before the query starts: the gap is one dead-letter
    row, the records after it are read. A 20 s trigger leaves the deletion
    (about a second) between two micro-batches."""
    orders = topic("served", 1, kafka)
    io = replace(kafka_io(spark, warehouse, orders_sql(orders), "served", kafka),
                 kafka_lost_records="skip")
    produce(kafka, orders, stamped(ORDERS))
    stop, started, served = threading.Event(), threading.Event(), []
    worker = threading.Thread(target=lambda: served.append(serve(
        io.pipeline, io, stop, on_started=started.set,
        options=ServeOptions(interval_s=20, report_every_s=60))))
    worker.start()
    try:
        assert started.wait(300), "serve did not start"
        assert output_rows(io, "result", "id", "item") == READ  # its catch-up run
        assert delete_unread(kafka, orders, OLD) == {0: 5}
        retention_ms(kafka, orders, -1)
        produce(kafka, orders, [_order(13, "pad")])
        # The micro-batch writes the gap's dead letter before its rows, and
        # stopping serve waits only for a micro-batch already running (the
        # next 20 s trigger may not have fired): wait for its rows, not for
        # the dead letter.
        # 300 s: a whole-suite run beside `splice test` once took more
        # than 120 s to get there on two cores.
        deadline = time.monotonic() + 300
        while 5 not in _offsets(spark, io) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        stop.set()
        worker.join(120)
    assert not worker.is_alive(), "serve did not stop"
    offsets = _offsets(spark, io)
    assert 5 in offsets, ("the micro-batch after the deletion wrote no rows in 300 s: "
                          f"{[s.line() for s in served[0]] if served else []}")
    assert _dead(spark, io) == [("orders", None, SKIPPED, orders, 0, 3)]
    assert offsets == [0, 1, 2, 5]
