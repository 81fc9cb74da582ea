"""JSON-lines sources keep arrival order: files in the order they were
completed (modification time, then name), lines in file order; several
files arriving in one run give the table that one file per run gives."""

from __future__ import annotations

import json
import os
import random

import pytest
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import make_io, output_rows

pytestmark = pytest.mark.spark

SQL = """
CREATE STREAM src (id INT, name STRING) WITH (location='{location}', format='json', key='id');
INSERT INTO latest SELECT TABLE * FROM src;
"""

BASE_MS = 1_700_000_000_000


def _write(folder: str, name: str, rows: list[tuple[int, str]], mtime_ms: int) -> None:
    """A finished file (written aside, renamed in), completed at ``mtime_ms``."""
    os.makedirs(folder, exist_ok=True)
    aside = os.path.join(folder, f"_{name}.tmp")
    with open(aside, "w") as fh:
        fh.writelines(json.dumps({"id": i, "name": n}) + "\n" for i, n in rows)
    os.utime(aside, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    os.replace(aside, os.path.join(folder, name))


def _fold(files: list[tuple[str, list[tuple[int, str]], int]]) -> list[tuple]:
    """The latest record per key, in arrival order, computed by hand."""
    latest: dict[int, str] = {}
    for _, rows, _ in sorted(files, key=lambda f: (f[2], f[0])):
        for i, n in rows:
            latest[i] = n
    return sorted(latest.items(), key=repr)


def _pipeline(spark, warehouse, name: str):
    return make_io(spark, warehouse, SQL.format(location=name), name=name)


def test_files_arriving_in_one_run_apply_in_arrival_order(spark, warehouse) -> None:
    # A big older file then a small newer one, and a small older file then a
    # big newer one; Spark's own order (by size) gets both wrong.
    files = [
        ("c.json", [(1, "old")], BASE_MS),
        ("d.json", [(i, "new") for i in range(1, 201)], BASE_MS + 1500),
        ("a.json", [(i, "big-old") for i in range(300, 500)], BASE_MS + 3000),
        ("b.json", [(300, "small-new")], BASE_MS + 4500),
    ]
    expected = _fold(files)
    assert dict(expected)[1] == "new" and dict(expected)[300] == "small-new"

    together = _pipeline(spark, warehouse, "together")
    for name, rows, mtime in files:
        _write(warehouse.source_path("together"), name, rows, mtime)
    run_pipeline(together.pipeline, together)
    assert output_rows(together, "latest", "id", "name") == expected

    # Another warehouse: one output name belongs to one pipeline.
    warehouse = WarehouseResource(root=warehouse.root + "-one-by-one")
    one_by_one = _pipeline(spark, warehouse, "one_by_one")
    for name, rows, mtime in files:
        _write(warehouse.source_path("one_by_one"), name, rows, mtime)
        run_pipeline(one_by_one.pipeline, one_by_one)
    assert output_rows(one_by_one, "latest", "id", "name") == expected


def test_many_files_of_random_sizes_in_one_run(spark, warehouse) -> None:
    rng = random.Random(7)
    files = []
    for f in range(10):
        keys = [rng.randrange(300) for _ in range(rng.choice([1, 5, 50, 400, 900]))]
        rows = [(k, f"file{f}-line{n}") for n, k in enumerate(keys)]
        # files 4 and 5 are completed in the same millisecond: the name decides
        mtime = BASE_MS + 1000 * (f if f != 5 else 4)
        files.append((f"f{f:02d}-{rng.randrange(10**6):06d}.json", rows, mtime))
    io = _pipeline(spark, warehouse, "random")
    for name, rows, mtime in files:
        _write(warehouse.source_path("random"), name, rows, mtime)
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "latest", "id", "name") == _fold(files)
