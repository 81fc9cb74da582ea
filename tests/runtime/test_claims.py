"""One warehouse, several pipelines: a pipeline name and an output belong to
one pipeline (runtime/claims.py). A second pipeline claiming either is
refused before it writes anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from splice.engine.io import StepIO
from splice.resources.warehouse import WarehouseResource
from splice.runtime.claims import ClaimRefused, claim
from splice.runtime.compile import compile_path, compile_text
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from splice.cli import main
from tests.helpers.pipeline import append

SOURCE = "CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');\n"


def _folder(root: Path, name: str, sql: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "pipeline.sql").write_text(sql)
    return folder


def _rows(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path)
                  .select("id", "item").collect())


@pytest.mark.spark
def test_a_second_pipeline_writing_an_output_is_refused(tmp_path: Path, spark, capsys) -> None:
    wh = str(tmp_path / "wh")
    small = _folder(tmp_path, "small", SOURCE + "INSERT INTO shared SELECT STREAM id, item "
                    "FROM orders WHERE id < 10;")
    large = _folder(tmp_path, "large", SOURCE + "INSERT INTO shared SELECT STREAM id, item "
                    "FROM orders WHERE id >= 10;")
    first = compile_path(small)
    io = Workspace(first, warehouse=WarehouseResource(root=wh), spark=spark).io
    append(io, "orders", [{"id": 1, "item": "pen"}, {"id": 2, "item": "ink"},
                          {"id": 11, "item": "desk"}])
    assert main(["run", str(small), "--warehouse", wh]) == 0
    capsys.readouterr()
    shared = io.table_path(first.outputs["shared"])
    assert _rows(spark, shared) == [(1, "pen"), (2, "ink")]

    assert main(["run", str(large), "--warehouse", wh]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"splice: pipeline 'large' ({large}) cannot write output 'shared' on warehouse {wh}: "
        f"pipeline 'small' ({small}) already writes it; rename the output in one of the two "
        f"pipelines, or drop the old one (delete {wh}/shared and "
        f"{wh}/_splice/output-claims/shared.json)\n")
    assert "Traceback" not in err
    assert _rows(spark, shared) == [(1, "pen"), (2, "ink")]  # untouched
    # Refused before anything was claimed or run: no trace of 'large'.
    assert not (Path(wh) / "_splice" / "large").exists()


@pytest.mark.spark
def test_two_folders_with_one_pipeline_name_are_refused(tmp_path: Path, spark) -> None:
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    sql = SOURCE + "INSERT INTO {out} SELECT STREAM id, item FROM orders;"
    a = compile_path(_folder(tmp_path / "a", "demo", sql.format(out="out_a")))
    b = compile_path(_folder(tmp_path / "b", "demo", sql.format(out="out_b")))
    assert a.name == b.name == "demo"
    io_a = Workspace(a, warehouse=wh, spark=spark).io
    append(io_a, "orders", [{"id": 1, "item": "pen"}])
    run_pipeline(a, io_a)
    with pytest.raises(ClaimRefused) as refused:
        run_pipeline(b, Workspace(b, warehouse=wh, spark=spark).io)
    assert str(refused.value) == (
        f"pipeline 'demo' ({tmp_path}/b/demo) cannot run on warehouse {wh.root}: pipeline "
        f"'demo' ({tmp_path}/a/demo) has the same name and owns {wh.root}/_splice/demo; "
        f"rename one of the two pipeline folders (or files), or drop the old pipeline "
        f"(delete {wh.root}/_splice/demo and its outputs)")
    assert not (tmp_path / "wh" / "out_b").exists()
    assert not (tmp_path / "wh" / "_splice" / "output-claims" / "out_b.json").exists()


@pytest.mark.spark
def test_the_same_pipeline_runs_again(tmp_path: Path, spark, capsys) -> None:
    wh = str(tmp_path / "wh")
    folder = _folder(tmp_path, "again", SOURCE + "INSERT INTO copy SELECT STREAM id, item "
                     "FROM orders;")
    pipeline = compile_path(folder)
    io = Workspace(pipeline, warehouse=WarehouseResource(root=wh), spark=spark).io
    append(io, "orders", [{"id": 1, "item": "pen"}])
    assert main(["run", str(folder), "--warehouse", wh]) == 0
    append(io, "orders", [{"id": 2, "item": "ink"}])
    assert main(["run", str(folder), "--warehouse", wh]) == 0
    assert _rows(spark, f"{wh}/copy") == [(1, "pen"), (2, "ink")]
    owner = json.loads((Path(wh) / "_splice" / "again" / "owner.json").read_text())
    assert owner == {"pipeline": "again", "origin": str(folder)}
    held = json.loads((Path(wh) / "_splice" / "output-claims" / "copy.json").read_text())
    assert held == {"pipeline": "again", "origin": str(folder), "output": "copy"}


# The claim itself reads and writes local files only: these need no Spark
# (spark=None is what StepIO holds for a local warehouse the claim never
# hands to Spark).

def _io(root: Path, pipeline) -> StepIO:
    return StepIO(spark=None, warehouse=WarehouseResource(root=str(root)), pipeline=pipeline)


def test_names_that_differ_only_by_punctuation_share_a_folder(tmp_path: Path) -> None:
    """``my-demo`` and ``my_demo`` both compile to pipeline 'my_demo'."""
    sql = SOURCE + "INSERT INTO {out} SELECT STREAM id, item FROM orders;"
    dash = compile_path(_folder(tmp_path, "my-demo", sql.format(out="o1")))
    under = compile_path(_folder(tmp_path, "my_demo", sql.format(out="o2")))
    claim(dash, _io(tmp_path / "wh", dash))
    with pytest.raises(ClaimRefused, match=r"pipeline 'my_demo' \(.*/my_demo\) cannot run .* "
                       r"pipeline 'my_demo' \(.*/my-demo\) has the same name"):
        claim(under, _io(tmp_path / "wh", under))


def test_outputs_are_claimed_without_case(tmp_path: Path) -> None:
    one = compile_text(SOURCE + "INSERT INTO Totals SELECT STREAM id FROM orders;", "p.sql", "p")
    two = compile_text(SOURCE + "INSERT INTO totals SELECT STREAM id FROM orders;", "q.sql", "q")
    claim(one, _io(tmp_path, one))
    with pytest.raises(ClaimRefused, match=r"pipeline 'q' .* cannot write output 'totals'.* "
                       r"pipeline 'p' \(compiled from text\) already writes it"):
        claim(two, _io(tmp_path, two))


def test_a_text_pipeline_may_change_between_runs(tmp_path: Path) -> None:
    """A pipeline compiled from text has no origin: the same name is the
    same pipeline (the tests recompile edited SQL under one name)."""
    first = compile_text(SOURCE + "INSERT INTO o SELECT STREAM id FROM orders;", "t.sql", "t")
    edited = compile_text(SOURCE + "INSERT INTO o SELECT STREAM item FROM orders;", "t.sql", "t")
    claim(first, _io(tmp_path, first))
    claim(edited, _io(tmp_path, edited))
    claim(first, _io(tmp_path, first))
    assert sorted(p.name for p in (tmp_path / "_splice").iterdir()) == ["output-claims", "t"]


def test_a_pipeline_name_over_the_limit_is_refused(tmp_path: Path) -> None:
    long = compile_text(SOURCE + "INSERT INTO o SELECT STREAM id FROM orders;", "t.sql",
                        "p" * 300)
    with pytest.raises(ClaimRefused, match=r"is 300 bytes long in UTF-8, over the limit of 200; "
                       r"rename the pipeline's folder or file"):
        claim(long, _io(tmp_path, long))
    assert not (tmp_path / "_splice").exists()
