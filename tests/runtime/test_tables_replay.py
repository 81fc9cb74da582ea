"""A replayed micro-batch of an aggregation or an ASOF join writes nothing
twice: both write through idempotent MERGEs (and the ASOF join's arrival log
through an idempotent append)."""

from __future__ import annotations

import os

import pytest
from splice.engine.io import delta_version
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import append, forget_last_batch, make_io, output_rows

pytestmark = pytest.mark.spark

SQL = """
CREATE STREAM l (id INT, k INT, t INT, lv INT) WITH (location='l', key='id');
CREATE STREAM r (rid INT, k INT, t INT, rv INT) WITH (location='r', key='rid');
CREATE TABLE nearest AS SELECT l.id AS id, r.rv AS rv FROM l ASOF JOIN r
  ON l.k = r.k AND r.t <= l.t;
CREATE TABLE totals AS SELECT k, COUNT(*) AS n, SUM(lv) AS s FROM l GROUP BY k;
"""


def test_replayed_batches_write_nothing_twice(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="replay")
    append(io, "l", [{"id": 1, "k": 1, "t": 5, "lv": 10}, {"id": 2, "k": 1, "t": 1, "lv": 20},
                     {"id": 3, "k": 2, "t": 9, "lv": 30}])
    append(io, "r", [{"rid": 7, "k": 1, "t": 2, "rv": 100}, {"rid": 8, "k": 2, "t": 3, "rv": 200},
                     {"rid": 9, "k": 2, "t": 9, "rv": 300}])
    run_pipeline(io.pipeline, io)
    nearest = [(1, 100), (3, 300)]
    totals = [(1, 2, 30), (2, 1, 30)]
    assert output_rows(io, "nearest", "id", "rv") == nearest
    assert output_rows(io, "totals", "k", "n", "s") == totals

    steps = [io.pipeline.outputs[name] for name in ("nearest", "totals")]
    log = os.path.join(io.checkpoint(steps[0]), "splice_asof_arrivals")
    tables = [io.table_path(s) for s in steps] + [log]
    versions = [delta_version(spark, path) for path in tables]
    replayed = [forget_last_batch(io.checkpoint(s)) for s in steps]
    run_pipeline(io.pipeline, io)

    assert all(os.path.exists(commit) for commit in replayed), "the batches ran again"
    assert [delta_version(spark, path) for path in tables] == versions
    assert output_rows(io, "nearest", "id", "rv") == nearest
    assert output_rows(io, "totals", "k", "n", "s") == totals
    assert spark.read.format("delta").load(log).count() == 6
