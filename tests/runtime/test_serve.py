"""Continuous mode: ``serve`` gives the rows ``run`` gives, on the same
checkpoints, switching between the two modes either way."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from splice.engine.faults import ENV as KILL_AT
from splice.engine.faults import KillPoint
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_pipeline
from splice.runtime.serve import ServedStep, ServeOptions, serve, stop_between_batches, stop_served
from splice.runtime.step_run import StepRun

from tests.conftest import ROOT, child_env
from tests.helpers.pipeline import LENSES_LEFT, append, make_io, output_rows

pytestmark = pytest.mark.spark

ROUNDS = [
    ([{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}],
     [{"id": 1, "customer_id": 1, "item": "Computer"},
      {"id": 2, "customer_id": 3, "item": "Keyboard"}]),
    ([{"id": 3, "name": "Ann"}],
     [{"id": 3, "customer_id": 3, "item": "Mouse"}, {"id": 4, "customer_id": 2, "item": "Pen"}]),
    ([], [{"id": 5, "customer_id": 1, "item": "Desk"}]),
]
EXPECTED = [("Ann", "Mouse"), ("Frank", "Pen"), ("John", "Computer"), ("John", "Desk"),
            (None, "Keyboard")]


def _add(io, n: int) -> None:
    customers, orders = ROUNDS[n]
    if customers:
        append(io, "customers", customers)
    append(io, "orders", orders)


def _add_while_serving(io, n: int) -> None:
    """Round ``n``, its customers in the table before its orders are written.
    A stream-table join reads the table as it is when an order comes, and
    serve runs the queries side by side: appending both at once would race
    the customers' MERGE against the orders' path."""
    customers, orders = ROUNDS[n]
    append(io, "customers", customers)
    keys = {c["id"] for c in customers}
    _until(lambda: keys <= {r["_key"] for r in io.read_table("customersTable").collect()})
    append(io, "orders", orders)


def _until(predicate, seconds: float = 180.0, seen=lambda: "") -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"serve did not get there in time: {seen()}"
        time.sleep(0.5)


def _serve(folder, io, env: dict[str, str]) -> tuple[subprocess.Popen, list[str], threading.Thread]:
    """`splice serve` of ``folder`` in a child process of its own session
    group, and the lines it prints as they come."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "splice.cli", "serve", str(folder), "--warehouse",
         io.warehouse.root, "--interval", "0.5", "--report-every", "2"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")))
    reader.start()
    return proc, lines, reader


def test_serve_and_run_give_the_same_rows_switching_either_way(spark, tmp_path) -> None:
    """Warehouse A only runs; warehouse B runs, then serves (round 2 arrives
    while it serves), then runs again: both end with the same rows, each
    exactly once, and serve reported its progress."""
    ran = make_io(spark, WarehouseResource(root=str(tmp_path / "a")), LENSES_LEFT, name="mode")
    both = make_io(spark, WarehouseResource(root=str(tmp_path / "b")), LENSES_LEFT, name="mode")
    for n in range(3):
        _add(ran, n)
        run_pipeline(ran.pipeline, ran)

    _add(both, 0)
    run_pipeline(both.pipeline, both)
    stop, started, reports = threading.Event(), threading.Event(), []
    worker = threading.Thread(target=lambda: reports.append(serve(
        both.pipeline, both, stop, on_report=reports.append, on_started=started.set,
        options=ServeOptions(interval_s=0.5, report_every_s=2.0))))
    worker.start()
    try:
        assert started.wait(300), "serve did not start"
        _add_while_serving(both, 1)
        _until(lambda: len(output_rows(both, "result", "name", "item")) == 4)
        # a report after the rows arrived: the two new orders, caught up
        _until(lambda: any("result: 2 rows read in 1 micro-batches, caught up" in line
                           for line in reports[-1]), seen=lambda: reports[-1])
    finally:
        stop.set()
        worker.join(120)
    assert not worker.is_alive(), "serve did not stop"
    served = reports[-1]
    assert {s.step_id: s.failures for s in served} == {s.step_id: 0 for s in served}
    # orders needs no check of its own; customers, read as a table, is
    # checked for rows without a key (their dead letter).
    assert "orders: read in place" in reports[-2]
    assert any(line.startswith("customers: ") and "caught up" in line
               for line in reports[-2])

    _add(both, 2)
    run_pipeline(both.pipeline, both)
    assert output_rows(both, "result", "name", "item") == EXPECTED
    assert output_rows(ran, "result", "name", "item") == EXPECTED


@pytest.mark.faults
def test_splice_serve_killed_then_served_again_and_stopped_on_sigterm(spark, tmp_path) -> None:
    """The CLI, twice. The first `splice serve` is killed (SIGKILL, its JVM
    included) while it serves round 1, between the join's output commit and
    its checkpoint's (the point the crash chain proves for `splice run`,
    tests/crash/test_crash_safety.py, reached here by a long-running query). The
    second's catch-up run replays that micro-batch without writing it again
    and reads round 2, which arrived while nothing ran; it then serves one
    more order, prints each step's progress, and on SIGTERM stops every
    query and exits 0: every row once."""
    folder = tmp_path / "pipeline"
    folder.mkdir()
    (folder / "p.sql").write_text(LENSES_LEFT)
    io = make_io(spark, WarehouseResource(root=str(tmp_path / "wh")), LENSES_LEFT, name="pipeline")
    _add(io, 0)
    run_pipeline(io.pipeline, io)  # the catch-up run finds nothing new: the kill comes later
    serving = "serving 'pipeline'"

    kill = f"{KillPoint.OUTPUT_COMMITTED.value}@result"
    proc, lines, reader = _serve(folder, io, child_env(**{KILL_AT: kill}))
    try:
        _until(lambda: any(line.startswith(serving) for line in lines), 300,
               seen=lambda: "".join(lines[-20:]))
        _add_while_serving(io, 1)
        code = proc.wait(300)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(10)
    assert code == -signal.SIGKILL, "".join(lines[-40:])
    # Killed after the output's commit: round 1's rows are in, its checkpoint does not know it.
    assert len(output_rows(io, "result", "name", "item")) == 4

    _add(io, 2)  # arrives while nothing runs: the next serve's catch-up run reads it
    proc, lines, reader = _serve(folder, io, child_env())
    try:
        _until(lambda: any(line.startswith(serving) for line in lines), 300,
               seen=lambda: "".join(lines[-20:]))
        # caught up: round 2 read, the killed micro-batch replayed, not rewritten
        assert output_rows(io, "result", "name", "item") == EXPECTED
        append(io, "orders", [{"id": 6, "customer_id": 2, "item": "Ink"}])
        _until(lambda: len(output_rows(io, "result", "name", "item")) == 6,
               seen=lambda: "".join(lines[-20:]))
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
        reader.join(10)
    text = "".join(lines)
    assert code == 0, text[-3000:]
    assert "SIGTERM: stopping every query" in text
    assert "result: 1 rows read in 1 micro-batches, stopped" in text  # the order served
    assert output_rows(io, "result", "name", "item") == sorted(
        [*EXPECTED, ("Frank", "Ink")], key=repr)


def test_a_failed_query_is_reported_and_restarted(spark, tmp_path) -> None:
    """A source table replaced under a served step (another schema): the
    step's query fails; serve reports the cause, restarts it after its
    back-off (failing again here), and the other queries go on."""
    io = make_io(spark, WarehouseResource(root=str(tmp_path / "wh")), LENSES_LEFT, name="fail")
    _add(io, 0)
    stop, started, reports = threading.Event(), threading.Event(), []
    worker = threading.Thread(target=lambda: reports.append(serve(
        io.pipeline, io, stop, on_report=reports.append, on_started=started.set,
        options=ServeOptions(interval_s=0.5, report_every_s=1.0, backoff_s=1.0))))
    worker.start()
    try:
        assert started.wait(300), "serve did not start"
        orders = io.warehouse.source_path(io.pipeline.sources["orders"].location)
        (spark.createDataFrame([(1, "x")], "id INT, note STRING").write.format("delta")
         .mode("overwrite").option("overwriteSchema", "true").save(orders))
        def failed_twice() -> bool:
            return bool(reports) and any("ordersStream: " in line and "2 failures" in line
                                         for line in reports[-1])
        _until(failed_twice, seen=lambda: reports[-1] if reports else "")
    finally:
        stop.set()
        worker.join(120)
    served = {s.step_id: s for s in reports[-1]}
    assert served["ordersStream"].failures >= 2
    assert "ordersStream" in served["ordersStream"].last_error
    assert served["customersTable"].failures == 0


def test_a_stop_finishes_the_micro_batches_in_flight_first(spark, tmp_path) -> None:
    """serve stops each query once its micro-batch in flight has finished
    (``stop_between_batches``; Spark's ``stop()`` alone cuts it, and the
    next run does it again), all queries within one deadline. A batch of
    four rows that take 1.5 s each, caught running beside an idle query:
    the idle query stops at once, the busy one's rows are written and its
    progress reported after the stop. A second such batch given 0.5 s is
    cut, and its served step's line says so."""
    source = str(tmp_path / "source")
    spark.range(4).write.format("delta").save(source)
    slow = F.udf(lambda v: time.sleep(1.5) or v, "bigint")

    def started(name: str, frame) -> StreamingQuery:
        return (frame.writeStream.format("delta")
                .option("checkpointLocation", str(tmp_path / f"cp_{name}"))
                .trigger(processingTime="0.25 seconds").start(str(tmp_path / name)))

    def caught_running(query: StreamingQuery) -> None:
        deadline = time.monotonic() + 60
        while not ((status := query.status)["isTriggerActive"] and status["isDataAvailable"]):
            assert time.monotonic() < deadline and query.lastProgress is None, status
            time.sleep(0.05)

    idle = started("idle", spark.readStream.format("delta").load(source))
    busy = None
    try:
        deadline = time.monotonic() + 60
        while idle.lastProgress is None:
            assert time.monotonic() < deadline and idle.isActive, idle.status
            time.sleep(0.05)
        # Started once the idle query is between micro-batches: started
        # together, the busy batch could end before the idle query's first
        # (a run of this test failed so, one in four alone).
        busy = started("busy", spark.readStream.format("delta").load(source)
                       .select(slow("id").alias("id")))
        caught_running(busy)
        assert stop_between_batches([busy, idle], 60) == []
        assert not idle.isActive and not busy.isActive
    finally:
        if busy is not None:
            busy.stop()
        idle.stop()
    assert busy is not None
    assert sorted(r.id for r in spark.read.format("delta").load(str(tmp_path / "busy"))
                  .collect()) == [0, 1, 2, 3]
    assert (busy.lastProgress["batchId"], busy.lastProgress["numInputRows"]) == (0, 4)

    cut = started("cut", spark.readStream.format("delta").load(source)
                  .select(slow("id").alias("id")))
    io = make_io(spark, WarehouseResource(root=str(tmp_path / "wh")), LENSES_LEFT, name="cut")
    step = ServedStep(run=StepRun(io, io.pipeline.steps[0].id), query=cut, started=True)
    try:
        caught_running(cut)
        stop_served([step], 0.5)
    finally:
        cut.stop()
    assert not cut.isActive and cut.lastProgress is None
    assert step.query is None and step.cut
    assert step.line().endswith(
        "stopped inside a micro-batch (the next run or serve does it again)")


@pytest.mark.spark
def test_a_served_steps_line_counts_rows_as_run_and_dagster_do(spark, warehouse) -> None:
    """Rows read, late records dropped and state rows, from the query's
    progress reports as Spark writes them."""
    io = make_io(spark, warehouse, LENSES_LEFT, name="line")
    step = ServedStep(run=StepRun(io, io.pipeline.steps[0].id), started=True, rows=3,
                      batches=1)
    step.progress.observe([{"batchId": 0, "numInputRows": 3, "stateOperators": [
        {"numRowsDroppedByWatermark": 2, "numRowsTotal": 5}]}])
    assert step.line() == (f"{step.step_id}: 3 rows read in 1 micro-batches, stopped, "
                           "2 late records dropped, 5 state rows")


class _Query:
    """A stand-in for a streaming query, between micro-batches: the branch
    where a query's stop raises (a Spark Connect server gone) is reached by
    no real query here, so this one raises on demand."""

    def __init__(self, fails: bool) -> None:
        self.fails, self.isActive, self.status = fails, True, {"isTriggerActive": False}

    def stop(self) -> None:
        if self.fails:
            raise ConnectionError("the server is gone")
        self.isActive = False


def test_a_query_whose_stop_raises_does_not_keep_the_others_running() -> None:
    gone, first, last = _Query(fails=True), _Query(fails=False), _Query(fails=False)
    with pytest.raises(ConnectionError, match="the server is gone"):
        stop_between_batches([first, gone, last], 5)
    assert (first.isActive, last.isActive) == (False, False)
