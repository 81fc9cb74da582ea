"""Runs continue where the last one stopped: each step's checkpoint."""

from __future__ import annotations

import json
import os

import pytest
from splice.engine.io import append as append_batch
from splice.engine.io import committed_batch, delta_version
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import LENSES_LEFT, append, forget_last_batch, make_io, output_rows

pytestmark = pytest.mark.spark


def test_second_run_joins_only_the_new_rows(spark, warehouse) -> None:
    io = make_io(spark, warehouse, LENSES_LEFT)
    append(io, "customers", [{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]

    append(io, "orders", [{"id": 2, "customer_id": 2, "item": "Mouse"},
                          {"id": 3, "customer_id": 9, "item": "Keyboard"}])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["result"].rows_written == 2
    assert output_rows(io, "result", "name", "item") == [
        ("Frank", "Mouse"), ("John", "Computer"), (None, "Keyboard")]

    # A run with no new data writes nothing.
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["result"].rows_written == 0
    assert len(output_rows(io, "result", "name", "item")) == 3


def test_a_run_before_the_first_record_leaves_every_table_empty(spark, warehouse) -> None:
    """An appending step creates its table with its first write; a run that
    wrote nothing still leaves the step's table, empty, with the planned
    columns, and later rows append to it."""
    io = make_io(spark, warehouse, LENSES_LEFT)
    run_pipeline(io.pipeline, io)
    for step in io.pipeline.steps:
        df = spark.read.format("delta").load(io.table_path(step))
        assert df.count() == 0, step.id
    result = spark.read.format("delta").load(io.table_path(io.pipeline.outputs["result"]))
    assert result.columns == ["_key", "name", "item", "ROWTIME"]

    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]


def test_replayed_micro_batch_writes_nothing_twice(spark, warehouse) -> None:
    """Forget that the last micro-batch committed (as a crash between the
    write and the checkpoint commit would): Spark replays it with the same
    batch id, and the micro-batch marks (engine/marks.py) keep its rows from
    being written again: the join step's append and the table step's MERGE."""
    io = make_io(spark, warehouse, LENSES_LEFT)
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    run_pipeline(io.pipeline, io)
    steps = [io.pipeline.step(step_id) for step_id in ("result", "customersTable")]
    versions = [delta_version(spark, io.table_path(s)) for s in steps]
    replayed = [forget_last_batch(io.checkpoint(s)) for s in steps]
    run_pipeline(io.pipeline, io)
    assert all(os.path.exists(commit) for commit in replayed), "the batches ran again"
    assert [delta_version(spark, io.table_path(s)) for s in steps] == versions
    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]
    table = io.read_table("customersTable").collect()
    assert [(r["_key"], r["name"]) for r in table] == [(1, "John")]


def test_an_empty_inputs_marker_does_not_break_the_next_run(spark, warehouse) -> None:
    """A crash while the marker was written in place left it empty, and every
    later run failed with JSONDecodeError; an unreadable marker is no marker."""
    io = make_io(spark, warehouse, LENSES_LEFT)
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    run_pipeline(io.pipeline, io)
    marker = os.path.join(io.checkpoint(io.pipeline.step("result")), "splice_inputs.json")
    open(marker, "w").close()
    append(io, "orders", [{"id": 2, "customer_id": 1, "item": "Mouse"}])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["result"].rows_written == 1
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"), ("John", "Mouse")]
    with open(marker) as fh:
        assert json.loads(fh.read())["definition"]


def test_a_table_marked_by_deltas_own_txn_actions_is_read_too(spark, tmp_path) -> None:
    """A warehouse written before the marks moved into the commits holds
    Delta's ``txn`` actions: a replay of its last batch is found there and
    writes nothing, the next batch is written with the new mark."""
    path = str(tmp_path / "t")
    rows = spark.createDataFrame([(1,)], "id INT")
    (rows.write.format("delta").mode("append")
     .option("txnAppId", "splice-old").option("txnVersion", 4).save(path))
    assert committed_batch(spark, path, "splice-old") == 4
    assert append_batch(rows, path, "splice-old", 4) is False  # the replay
    assert delta_version(spark, path) == 0
    assert append_batch(rows, path, "splice-old", 5) is True
    assert committed_batch(spark, path, "splice-old") == 5
    assert committed_batch(spark, path, "splice-other") is None
    assert spark.read.format("delta").load(path).count() == 2
