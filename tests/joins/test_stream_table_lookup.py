"""Stream-table joins: the table is read afresh for every micro-batch, and
Lenses' opt-in late match keeps unmatched records for a bounded time."""

from __future__ import annotations

import pytest
import splice.runtime.step_run
from splice.engine.io import StepIO
from splice.runtime.runner import run_pipeline, run_step

from tests.helpers.pipeline import LENSES_LEFT, append, make_io, output_rows

pytestmark = pytest.mark.spark


def test_the_table_is_read_afresh_for_every_micro_batch(spark, warehouse,
                                                        monkeypatch) -> None:
    """One run of the join, two micro-batches; between them a customer is
    written to the table (a real Delta MERGE by the materialization step). The
    second micro-batch's order meets that customer, so the table was read again
    for it, not once when the query started.

    Two seams of Splice's own code are patched, since nothing else splits one
    run into two micro-batches at a chosen point: the join reads its stream one
    file per micro-batch, and the append of the first micro-batch is followed
    by the table write."""
    io = make_io(spark, warehouse, LENSES_LEFT)
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 0, "customer_id": 1, "item": "Computer"}])
    run_pipeline(io.pipeline, io)  # the table holds John
    # Two orders, written by the steps the join reads from in two commits of a file each.
    for order in ({"id": 1, "customer_id": 2, "item": "Mouse"},
                  {"id": 2, "customer_id": 2, "item": "Keyboard"}):
        append(io, "orders", [order])
        for step_id in ("ordersStream", "ordersStream_by_customer_id"):
            run_step(io.pipeline.step(step_id), io)
    append(io, "customers", [{"id": 2, "name": "Frank"}])  # not in the table yet

    real_read, real_append = StepIO.read_stream, splice.runtime.step_run.append
    monkeypatch.setattr(StepIO, "read_stream", lambda self, step_id, **options: real_read(
        self, step_id, **{**options, "maxFilesPerTrigger": "1"}))
    batches: list[int] = []

    def append_then_update_the_table(df, path, txn, batch_id) -> None:
        real_append(df, path, txn, batch_id)
        batches.append(batch_id)
        if len(batches) == 1:
            run_step(io.pipeline.step("customersTable"), io)

    monkeypatch.setattr(splice.runtime.step_run, "append", append_then_update_the_table)
    run_step(io.pipeline.outputs["result"], io)

    assert len(batches) == 2, "the two orders came in two micro-batches"
    assert output_rows(io, "result", "name", "item") == [
        ("Frank", "Keyboard"), ("John", "Computer"), (None, "Mouse")]


LATE = """
CREATE STREAM customers (id INT, name STRING, ts TIMESTAMP)
  WITH (location='customers', key='id', timestamp='ts');
CREATE STREAM orders (item STRING, customer_id INT, ts TIMESTAMP)
  WITH (location='orders', timestamp='ts');
SET join.late.match.retention = '1 MINUTE';
WITH customersTable AS (SELECT TABLE * FROM customers WHERE name <> 'Nobody');
CREATE STREAM lefts AS SELECT customersTable.name, orders.item
  FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
CREATE STREAM inners AS SELECT customersTable.name, orders.item
  FROM orders JOIN customersTable ON customersTable.id = orders.customer_id;
CREATE STREAM rights AS SELECT customersTable.name, orders.item
  FROM customersTable RIGHT JOIN orders ON customersTable.id = orders.customer_id;
"""


def _at(second: int) -> str:
    return f"2024-01-01 00:{second // 60:02d}:{second % 60:02d}"


def test_late_match_joins_a_record_once_its_table_row_arrives(spark, warehouse) -> None:
    io = make_io(spark, warehouse, LATE, name="late")
    append(io, "customers", [{"id": 1, "name": "Frank", "ts": _at(0)}])
    append(io, "orders", [
        {"item": "Computer", "customer_id": 1, "ts": _at(0)},
        {"item": "Keyboard", "customer_id": 2, "ts": _at(1)},
        {"item": "Mouse", "customer_id": 3, "ts": _at(2)},
        {"item": "Pen", "customer_id": 4, "ts": _at(3)},
    ])
    run_pipeline(io.pipeline, io)
    missed = [("Frank", "Computer"), (None, "Keyboard"), (None, "Mouse"), (None, "Pen")]
    assert output_rows(io, "lefts", "name", "item") == missed
    assert output_rows(io, "inners", "name", "item") == [("Frank", "Computer")]

    # John arrives in time for Keyboard, and is updated in the same run: the
    # record is joined once, with the row as it is now. Nobody is filtered out
    # of the table, so Pen still waits.
    append(io, "customers", [{"id": 2, "name": "John", "ts": _at(10)},
                             {"id": 4, "name": "Nobody", "ts": _at(10)}])
    append(io, "customers", [{"id": 2, "name": "Johnny", "ts": _at(11)}])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "lefts", "name", "item") == sorted(
        [*missed, ("Johnny", "Keyboard")], key=repr)
    assert output_rows(io, "inners", "name", "item") == [("Frank", "Computer"),
                                                         ("Johnny", "Keyboard")]
    assert output_rows(io, "rights", "name", "item") == output_rows(
        io, "lefts", "name", "item")

    # A later change of John does not emit Keyboard again; customer 3 arrives
    # 63 s after Mouse, past the retention: Mouse stays unmatched.
    append(io, "customers", [{"id": 2, "name": "Jon", "ts": _at(20)},
                             {"id": 3, "name": "Ann", "ts": _at(65)}])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "inners", "name", "item") == [("Frank", "Computer"),
                                                         ("Johnny", "Keyboard")]

    # Pen's customer, at last, within the minute: joined late.
    append(io, "customers", [{"id": 4, "name": "Paula", "ts": _at(30)}])
    run_pipeline(io.pipeline, io)
    # ... but by now the stream time (65 s) has passed Pen's 3 s + 60 s.
    assert ("Paula", "Pen") not in output_rows(io, "inners", "name", "item")


def test_without_the_setting_a_miss_is_emitted_once(spark, warehouse) -> None:
    io = make_io(spark, warehouse, LATE.replace(
        "SET join.late.match.retention = '1 MINUTE';", ""), name="nolate")
    append(io, "orders", [{"item": "Keyboard", "customer_id": 2, "ts": _at(1)}])
    run_pipeline(io.pipeline, io)
    append(io, "customers", [{"id": 2, "name": "John", "ts": _at(10)}])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "lefts", "name", "item") == [(None, "Keyboard")]
    assert output_rows(io, "inners", "name", "item") == []
