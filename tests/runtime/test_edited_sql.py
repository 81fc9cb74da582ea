"""Edited SQL is detected, refused with the command that rebuilds, and the
rebuild gives what a fresh run of the new SQL gives."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from splice.engine import definitions
from splice.engine.io import StepIO
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from splice.cli import main
from tests.helpers.pipeline import append, output_rows

pytestmark = pytest.mark.spark

SOURCES = """
CREATE STREAM l (id INT, k INT, x INT, ts TIMESTAMP) WITH (location='l', key='id', timestamp='ts');
CREATE STREAM r (rid INT, k INT, y INT, ts TIMESTAMP)
  WITH (location='r', key='rid', timestamp='ts');
CREATE STREAM c (id INT, name STRING) WITH (location='c', key='id');
WITH cTable AS (SELECT TABLE * FROM c);
INSERT INTO keep SELECT STREAM l.id AS id, l.x AS x FROM l;
"""
OLD = {
    "ss": "INSERT INTO ss SELECT STREAM l.id AS id, r.y AS y FROM l JOIN r WITHIN 1 MINUTE "
          "ON l.k = r.k;",
    "agg": "CREATE TABLE agg AS SELECT k, COUNT(*) AS n FROM l GROUP BY k;",
    "cond": "INSERT INTO cond SELECT STREAM l.id AS id, r.rid AS rid FROM l JOIN r "
            "WITHIN 1 MINUTE ON l.k = r.k;",
    "grp": "CREATE TABLE grp AS SELECT k, SUM(x) AS s FROM l GROUP BY k;",
    "st": "INSERT INTO st SELECT STREAM l.id AS id, cTable.name AS name FROM l "
          "LEFT JOIN cTable ON cTable.id = l.k WHERE l.x > 0;",
}
# The five edits: a column added to a stream-stream join and to an
# aggregation, a changed join condition, a WHERE added to a GROUP BY, a
# changed filter of a stream-table join.
NEW = {
    "ss": OLD["ss"].replace("r.y AS y", "r.y AS y, l.x AS x"),
    "agg": OLD["agg"].replace("COUNT(*) AS n", "COUNT(*) AS n, SUM(x) AS s"),
    "cond": OLD["cond"].replace("ON l.k = r.k", "ON l.x = r.y"),
    "grp": OLD["grp"].replace("FROM l GROUP BY", "FROM l WHERE x > 2 GROUP BY"),
    "st": OLD["st"].replace("l.x > 0", "l.x > 1"),
}
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _rows(first: int) -> dict[str, list[dict[str, Any]]]:
    def ts(s: int) -> dt.datetime:
        return T0 + dt.timedelta(seconds=s)

    return {
        "l": [{"id": first + i, "k": i % 3, "x": i % 5, "ts": ts(first + i)} for i in range(10)],
        "r": [{"rid": first + i, "k": i % 3, "y": (i + 1) % 5, "ts": ts(first + i)}
              for i in range(6)],
    }


def _write(folder: Path, statements: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "p.sql").write_text(SOURCES + "\n".join(statements.values()) + "\n")
    return folder


def _io(spark: Any, folder: Path, root: Path) -> StepIO:
    return Workspace(compile_path(folder), warehouse=WarehouseResource(root=str(root)),
                     spark=spark).io


def _feed(io: StepIO, first: int) -> None:
    for source, rows in _rows(first).items():
        append(io, source, rows)


COLUMNS = {"keep": ("id", "x"), "ss": ("id", "y"), "agg": ("k", "n"), "cond": ("id", "rid"),
           "grp": ("k", "s"), "st": ("id", "name")}
NEW_COLUMNS = {**COLUMNS, "ss": ("id", "y", "x"), "agg": ("k", "n", "s")}


def test_each_edit_is_refused_then_rebuilt(spark, tmp_path: Path, capsys) -> None:
    folder = _write(tmp_path / "p", OLD)
    warehouse = tmp_path / "wh"
    old = _io(spark, folder, warehouse)
    append(old, "c", [{"id": 0, "name": "zero"}, {"id": 1, "name": "one"}])
    _feed(old, 0)
    run_pipeline(old.pipeline, old)
    keep_before = output_rows(old, "keep", "id", "x")

    new_dir = _write(folder, NEW)  # the user edits the file
    new = _io(spark, new_dir, warehouse)
    _feed(new, 100)
    with pytest.raises(definitions.DefinitionChanged) as refused:
        run_pipeline(new.pipeline, new)
    changed = {c.step.id for c in refused.value.changes}
    assert changed == set(NEW)
    assert "keep" not in refused.value.refused
    assert output_rows(new, "keep", "id", "x") == keep_before  # nothing ran

    # What the user sees, with the command that rebuilds.
    assert main(["run", str(new_dir), "--warehouse", str(warehouse)]) == 1
    err = capsys.readouterr().err
    assert "'grp' (aggregate, " in err and "filter: none -> \"`x` > 2\"" in err
    assert "--rebuild" in err and "Traceback" not in err

    assert main(["run", str(new_dir), "--warehouse", str(warehouse),
                 "--rebuild", "ss,agg,cond", "--rebuild", "grp", "--rebuild", "st"]) == 0
    assert "rebuilding 5 step(s)" in capsys.readouterr().out

    fresh = _io(spark, new_dir, tmp_path / "fresh")  # the new SQL from the start
    append(fresh, "c", [{"id": 0, "name": "zero"}, {"id": 1, "name": "one"}])
    _feed(fresh, 0)
    run_pipeline(fresh.pipeline, fresh)
    _feed(fresh, 100)
    run_pipeline(fresh.pipeline, fresh)
    for name, columns in NEW_COLUMNS.items():
        assert output_rows(new, name, *columns) == output_rows(fresh, name, *columns), name
    sums: dict[int, int] = {}
    for row in _rows(0)["l"] + _rows(100)["l"]:
        if row["x"] > 2:
            sums[row["k"]] = sums.get(row["k"], 0) + row["x"]
    assert output_rows(new, "grp", "k", "s") == sorted(sums.items())  # every group recomputed


def test_a_moved_statement_is_no_change(spark, tmp_path: Path) -> None:
    folder = _write(tmp_path / "p", OLD)
    io = _io(spark, folder, tmp_path / "wh")
    _feed(io, 0)
    run_pipeline(io.pipeline, io)
    moved = _write(folder, {k: "-- moved\n" + OLD[k] for k in reversed(OLD)})
    again = _io(spark, moved, tmp_path / "wh")
    _feed(again, 100)
    run_pipeline(again.pipeline, again)
    assert len(output_rows(again, "keep", "id", "x")) == 20


def test_rebuild_all_and_unknown_step(spark, tmp_path: Path, capsys) -> None:
    folder = _write(tmp_path / "p", {"agg": OLD["agg"]})
    warehouse = tmp_path / "wh"
    io = _io(spark, folder, warehouse)
    _feed(io, 0)
    run_pipeline(io.pipeline, io)
    assert main(["run", str(folder), "--warehouse", str(warehouse), "--rebuild", "nope"]) == 2
    assert "names no step" in capsys.readouterr().err
    assert main(["run", str(folder), "--warehouse", str(warehouse), "--rebuild", "all"]) == 0
    assert output_rows(io, "agg", "k", "n") == [(0, 4), (1, 3), (2, 3)]
    assert output_rows(io, "keep", "id", "x") == sorted(
        ((r["id"], r["x"]) for r in _rows(0)["l"]), key=repr)
