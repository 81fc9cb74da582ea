"""One warehouse, several pipelines: a pipeline is its name, wherever its
folder, and an output belongs to one pipeline (runtime/claims.py). A second
pipeline claiming an output is refused before it writes anything."""

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
def test_a_moved_or_copied_folder_is_the_same_pipeline(tmp_path: Path, spark) -> None:
    """A pipeline is its name in its warehouse (issue 53): its folder copied
    elsewhere (a new deploy, another checkout) runs on the same checkpoints
    and tables, every row once, and back again; the claims record the folder
    it now runs from and the one before. The same name with other SQL for a
    step is refused as edited SQL: nothing is mixed."""
    from splice.engine.definitions import DefinitionChanged

    wh = WarehouseResource(root=str(tmp_path / "wh"))
    sql = SOURCE + "INSERT INTO out SELECT STREAM id, item FROM orders;"
    first = compile_path(_folder(tmp_path / "a", "demo", sql))
    io = Workspace(first, warehouse=wh, spark=spark).io
    append(io, "orders", [{"id": 1, "item": "pen"}])
    run_pipeline(first, io)
    copy = compile_path(_folder(tmp_path / "b", "demo", sql))
    append(io, "orders", [{"id": 2, "item": "ink"}])
    run_pipeline(copy, Workspace(copy, warehouse=wh, spark=spark).io)
    assert _rows(spark, f"{wh.root}/out") == [(1, "pen"), (2, "ink")]
    claims = Path(wh.root) / "_splice"
    moved = {"origin": str(tmp_path / "b" / "demo"), "moved_from": str(tmp_path / "a" / "demo")}
    assert json.loads((claims / "demo" / "owner.json").read_text()) == {"pipeline": "demo",
                                                                        **moved}
    assert json.loads((claims / "output-claims" / "out.json").read_text()) == {
        "pipeline": "demo", **moved, "output": "out"}
    append(io, "orders", [{"id": 3, "item": "cap"}])
    run_pipeline(first, io)  # the old folder again
    assert _rows(spark, f"{wh.root}/out") == [(1, "pen"), (2, "ink"), (3, "cap")]

    other = compile_path(_folder(tmp_path / "c", "demo", SOURCE + (
        "INSERT INTO out SELECT STREAM id, UPPER(item) AS item FROM orders;")))
    with pytest.raises(DefinitionChanged, match="--rebuild"):
        run_pipeline(other, Workspace(other, warehouse=wh, spark=spark).io)
    assert _rows(spark, f"{wh.root}/out") == [(1, "pen"), (2, "ink"), (3, "cap")]


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


def test_names_that_differ_only_by_punctuation_are_one_pipeline(tmp_path: Path) -> None:
    """``my-demo`` and ``my_demo`` both compile to pipeline 'my_demo': one
    pipeline of the warehouse, whose claims follow the folder it last ran
    from (Dagster refuses the two in one code location)."""
    sql = SOURCE + "INSERT INTO {out} SELECT STREAM id, item FROM orders;"
    dash = compile_path(_folder(tmp_path, "my-demo", sql.format(out="o1")))
    under = compile_path(_folder(tmp_path, "my_demo", sql.format(out="o2")))
    claim(dash, _io(tmp_path / "wh", dash))
    claim(under, _io(tmp_path / "wh", under))
    owner = json.loads((tmp_path / "wh" / "_splice" / "my_demo" / "owner.json").read_text())
    assert owner == {"pipeline": "my_demo", "origin": str(tmp_path / "my_demo"),
                     "moved_from": str(tmp_path / "my-demo")}


def test_a_pipeline_folder_named_by_another_record_is_refused(tmp_path: Path) -> None:
    """An owner record naming another pipeline in this pipeline's folder
    (edited by hand) is refused, the way out without deleting first."""
    pipeline = compile_text(SOURCE + "INSERT INTO o SELECT STREAM id FROM orders;", "t.sql", "t")
    (tmp_path / "_splice" / "t").mkdir(parents=True)
    owner = tmp_path / "_splice" / "t" / "owner.json"
    owner.write_text('{"pipeline": "u", "origin": "/x/u"}')
    with pytest.raises(ClaimRefused) as refused:
        claim(pipeline, _io(tmp_path, pipeline))
    assert str(refused.value) == (
        f"pipeline 't' (compiled from text) cannot run on warehouse {tmp_path}: {owner} names "
        f"pipeline 'u' (/x/u); rename this pipeline's folder (or file), or, if "
        f"{tmp_path}/_splice/t is this pipeline's, put its name back in {owner}")


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
