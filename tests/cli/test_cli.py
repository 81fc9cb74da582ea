"""The splice command as a user meets it."""

from __future__ import annotations

from pathlib import Path

import pytest
from splice.runtime.workspace import Workspace

from splice.cli import main
from tests.conftest import CASES, ROOT


def test_validate_ok(capsys) -> None:
    assert main(["validate", str(ROOT / "pipelines" / "demo")]) == 0
    assert "ok" in capsys.readouterr().out


def test_validate_prints_positioned_errors(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE STREAM o (id INT, item STRING) WITH (location='o');\n"
                   "INSERT INTO out SELECT STREAM o.itme FROM o;\n")
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{bad}:2:")
    assert "unknown column 'o.itme'" in out and "did you mean 'item'" in out
    assert "Traceback" not in out


def test_validate_prints_every_error_when_a_statement_does_not_parse(tmp_path: Path,
                                                                     capsys) -> None:
    """A statement that does not parse does not hide the others' errors;
    a reader of the name it declares is not reported again."""
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE STREAM o (id INT, item STRING) WITH (location='o');\n"
                   "CREATE STREAM p (id INT,, note STRING) WITH (location='p');\n"
                   "INSERT INTO out SELECT STREAM o.itme FROM o;\n"
                   "INSERT INTO out2 SELECT STREAM p.note FROM p;\n")
    assert main(["validate", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{bad}:2:25", f"{bad}:3:31"], lines
    assert "unknown column 'o.itme'" in lines[1] and "did you mean 'item'" in lines[1]


def test_validate_a_sink_over_a_failed_statement_gives_that_error(tmp_path: Path,
                                                                   capsys) -> None:
    """Issue 55: an output on a topic over a statement that failed gives the
    failed statement's error (and its own, when it has one), not a traceback."""
    bad = tmp_path / "bad.sql"
    first = "CREATE STREAM s WITH (KAFKA_TOPIC='o', VALUE_FORMAT='JSON');\n"
    bad.write_text(first + "CREATE STREAM b WITH (KAFKA_TOPIC='b', VALUE_FORMAT='JSON') "
                   "AS SELECT * FROM s EMIT CHANGES;\n")
    assert main(["validate", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:1:17: CREATE STREAM s needs a "
                                                   "column list"), lines
    assert "; declare the columns" in lines[0]
    # A sink format still refused (Protobuf) gives its own error after it.
    bad.write_text(first + "CREATE STREAM b WITH (KAFKA_TOPIC='b', VALUE_FORMAT='PROTOBUF') "
                   "AS SELECT * FROM s EMIT CHANGES;\n")
    assert main(["validate", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{bad}:1:17", f"{bad}:2:53"], lines
    assert "value format 'PROTOBUF' is not supported" in lines[1]


def test_explain_shows_strategy_keys_and_graph(capsys) -> None:
    assert main(["explain", str(ROOT / "pipelines" / "demo")]) == 0
    out = capsys.readouterr().out
    assert "StreamTableLookupJoin" in out
    assert "strategy: stream-table lookup" in out
    assert "type: LEFT" in out
    assert "Repartition" in out and "new key: `customer_id`" in out
    assert "graph LR" in out and "customersTable --> orders_enriched" in out


@pytest.mark.spark
def test_splice_test_is_strict(tmp_path: Path, spark, capsys) -> None:
    """One wrong value, one missing row, one extra row: each fails the case."""
    text = (CASES / "lenses-stream-table-left.yaml").read_text()
    good = "      - {name: John, item: Computer}\n      - {name: John, item: Mouse}\n" \
           "      - {name: null, item: Keyboard}\n"
    assert good in text
    variants = {
        "wrong-value": good.replace("Mouse}", "Mousse}"),
        "missing-row": good.replace("      - {name: null, item: Keyboard}\n", ""),
        "extra-row": good + "      - {name: Frank, item: Keyboard}\n",
    }
    paths = []
    for label, expected in variants.items():
        path = tmp_path / f"{label}.yaml"
        path.write_text(text.replace(good, expected))
        paths.append(str(path))
    assert main(["test", str(CASES / "lenses-stream-table-left.yaml"), *paths]) == 1
    out = capsys.readouterr().out
    assert "PASS lenses-stream-table-left" in out
    assert out.count("FAIL lenses-stream-table-left") == 3
    assert "missing    {name: 'John', item: 'Mousse'}" in out
    assert "unexpected {name: 'John', item: 'Mouse'}" in out
    assert "unexpected {name: None, item: 'Keyboard'}" in out or \
        "unexpected {name: null, item: 'Keyboard'}" in out
    assert "missing    {name: 'Frank', item: 'Keyboard'}" in out
    assert "1 passed, 3 failed" in out


@pytest.mark.spark
def test_demo_runs_end_to_end_and_prints_the_outputs(tmp_path: Path, spark, capsys) -> None:
    """The README's first command, minus the setup: writes the demo data, runs
    every step, prints each output table and the dead-letter table."""
    warehouse = tmp_path / "wh"
    assert main(["demo", "--warehouse", str(warehouse),
                 "--pipeline", str(ROOT / "pipelines" / "demo")]) == 0
    out = capsys.readouterr().out
    assert f"output orders_enriched (stream) at {warehouse}/orders_enriched: 3 rows" in out
    assert f"output orders_matched (stream) at {warehouse}/orders_matched: 2 rows" in out
    assert "|NULL|Keyboard|" in out
    assert "column 'customer_id': 'three' is not INT" in out
    assert "[7/7] join        orders_matched: 2 rows written" in out
    # customers is a Delta table read where it is: its check read its rows
    assert "[1/7] source      customers: 2 rows read (a Delta table, read where it is)" in out

    # `splice show`: an output's rows, and a source's dead letters, by name
    demo = str(ROOT / "pipelines" / "demo")
    assert main(["show", demo, "orders_enriched", "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"output orders_enriched at {warehouse}/orders_enriched: 3 rows\n")
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("|")]
    assert rows[0] and [c.strip() for c in rows[0]] == ["_key", "name", "item", "ROWTIME"]
    assert [[c.strip() for c in row][1:3] for row in rows][1:] == [
        ["John", "Computer"], ["John", "Mouse"], ["NULL", "Keyboard"]], out
    assert main(["show", demo, "orders", "--dead-letters", "--warehouse", str(warehouse),
                 "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dead letters of orders at ") and ": 1 row\n" in out
    assert "'three' is not INT" in out
    assert main(["show", demo, "nope", "--warehouse", str(warehouse)]) == 1
    assert "has no output, source or step 'nope'; its outputs and sources: customers, " \
        in capsys.readouterr().err


def test_show_refuses_a_limit_below_one_at_the_flag(capsys) -> None:
    """Before Spark starts, in the flag's own words (not --parallel's hint)."""
    with pytest.raises(SystemExit) as stop:
        main(["show", str(ROOT / "pipelines" / "demo"), "orders_enriched", "--limit", "0"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --limit: " in err and "step at a time" not in err


def test_demo_refuses_to_wipe_a_folder_that_is_not_a_warehouse(tmp_path: Path, capsys) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    assert main(["demo", "--warehouse", str(tmp_path),
                 "--pipeline", str(ROOT / "pipelines" / "demo")]) == 2
    assert (tmp_path / "precious.txt").exists()
    assert "not a Splice warehouse" in capsys.readouterr().err


def test_validate_rejects_a_file_that_is_not_utf8(tmp_path: Path, capsys) -> None:
    """A Latin-1 file is one positioned error at its first bad byte, not a
    UnicodeDecodeError traceback."""
    bad = tmp_path / "latin.sql"
    bad.write_bytes(b"CREATE STREAM a (id INT);\n-- caf\xe9\nINSERT INTO o SELECT * FROM a;\n")
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out == (f"{bad}:2:7: the file is not UTF-8 (byte 0xe9 here is not valid UTF-8); "
                   "save it as UTF-8\n")


def test_validate_accepts_a_utf8_byte_order_mark(tmp_path: Path, capsys) -> None:
    """Editors on Windows start UTF-8 files with a BOM; it is not SQL text,
    and positions after it count from the first real character."""
    with_bom = tmp_path / "bom.sql"
    with_bom.write_bytes("\ufeffCREATE STREAM a (id INT);\nINSERT INTO o SELECT * FROM a;\n"
                         .encode("utf-8"))
    assert main(["validate", str(with_bom)]) == 0
    assert capsys.readouterr().out == f"{with_bom}: ok, pipeline 'bom' with 2 steps\n"
    broken = tmp_path / "broken.sql"
    broken.write_bytes("\ufeffCREATE STREAM a (id INT);\nINSERT INTO o SELECT * FROM b;\n"
                       .encode("utf-8"))
    assert main(["validate", str(broken)]) == 1
    assert capsys.readouterr().out.startswith(f"{broken}:2:29: unknown source or step 'b'")


def test_validate_rejects_a_name_outside_the_warehouse(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "escape.sql"
    bad.write_text('CREATE STREAM a (id INT);\nINSERT INTO "../../../tmp/x" SELECT * FROM a;\n')
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{bad}:2:13: the output name '../../../tmp/x' holds a path separator")


def _two_pipelines(tmp_path: Path) -> Path:
    folder = tmp_path / "pipelines"
    (folder / "first").mkdir(parents=True)
    (folder / "first" / "p.sql").write_text(
        "CREATE STREAM s (id INT, v STRING) WITH (location='s1', key='id');\n"
        "INSERT INTO out_one SELECT STREAM id, v FROM s;\n")
    (folder / "second.sql").write_text(
        "CREATE STREAM s (id INT, v STRING) WITH (location='s2', key='id');\n"
        "INSERT INTO out_two SELECT STREAM id, v FROM s WHERE id > 1;\n")
    return folder


def test_validate_and_explain_take_a_folder_of_pipelines(tmp_path: Path, capsys) -> None:
    folder = _two_pipelines(tmp_path)
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"{folder / 'first'}: ok, pipeline 'first'" in out
    assert f"{folder / 'second.sql'}: ok, pipeline 'second'" in out
    assert main(["explain", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "pipeline first:" in out and "pipeline second:" in out
    assert main(["validate", str(tmp_path / "nothing")]) == 2


def test_run_takes_a_folder_of_pipelines(tmp_path: Path, spark, capsys) -> None:
    from splice.resources.warehouse import WarehouseResource
    from splice.runtime.compile import compile_path

    from splice.testing.cases import append_rows

    folder = _two_pipelines(tmp_path)
    warehouse = WarehouseResource(root=str(tmp_path / "wh"))
    for path in (folder / "first", folder / "second.sql"):
        pipeline = compile_path(path)
        io = Workspace(pipeline, warehouse=warehouse, spark=spark).io
        append_rows(io, pipeline.sources["s"], [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
    assert main(["run", str(folder), "--warehouse", warehouse.root]) == 0
    out = capsys.readouterr().out
    assert "== pipeline 'first'" in out and "== pipeline 'second'" in out
    rows = {name: sorted(r["v"] for r in spark.read.format("delta").load(
        warehouse.output_path(name)).collect()) for name in ("out_one", "out_two")}
    assert rows == {"out_one": ["a", "b"], "out_two": ["b"]}


def test_serve_help_names_the_defaults_serving_takes(capsys) -> None:
    from splice.runtime.serve import ServeOptions

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = ServeOptions()
    assert f"trigger interval (default {defaults.interval_s:g})" in text
    assert f"progress (default {defaults.report_every_s:g})" in text


def test_a_parallel_of_none_is_refused_by_the_flag(capsys) -> None:
    for bad, reason in (("0", "0 is less than 1"), ("x", "'x' is not a whole number")):
        with pytest.raises(SystemExit) as exit_:
            main(["run", str(ROOT / "pipelines" / "demo"), "--parallel", bad])
        assert exit_.value.code == 2
        assert f"argument --parallel: {reason}" in capsys.readouterr().err


def test_a_rebuild_of_no_step_is_refused_before_spark_starts(tmp_path: Path, capsys) -> None:
    code = main(["run", str(ROOT / "pipelines" / "demo"), "--warehouse", str(tmp_path),
                 "--rebuild", "nosuchstep"])
    captured = capsys.readouterr()
    assert code == 2
    assert "starting Spark" not in captured.out
    assert captured.err.startswith(
        "splice: --rebuild names no step of pipeline 'demo': nosuchstep (its steps: customers,")


def test_a_missing_file_is_named_without_the_os_error_number(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["test", str(missing)]) == 2
    assert capsys.readouterr().err == f"splice: {missing}: no such file or folder\n"
    assert main(["run", str(missing)]) == 2
    assert capsys.readouterr().err == f"splice: {missing}: no such pipeline file or folder\n"
    # the demo names a missing pipeline before it says it writes anything
    assert main(["demo", "--pipeline", str(missing), "--warehouse", str(tmp_path / "wh")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"splice: {missing}: no such file or folder\n"


def test_durations_are_checked_at_the_flag(capsys) -> None:
    demo = str(ROOT / "pipelines" / "demo")
    for args, reason in ((["serve", demo, "--interval", "-1"],
                          "argument --interval: -1 is less than 0"),
                         (["serve", demo, "--report-every", "0"],
                          "argument --report-every: 0 is not above 0"),
                         (["run", demo, "--wait", "-5"], "argument --wait: -5 is less than 0"),
                         (["maintain", demo, "--retain-hours", "nan"],
                          "argument --retain-hours: 'nan' is not a number")):
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 2
        assert reason in capsys.readouterr().err


def test_a_case_file_that_is_not_a_case_fails_with_where_and_why(tmp_path: Path,
                                                                  capsys) -> None:
    files = {"yaml.yaml": ("case: x\nsql: [unclosed\n",
                           "yaml.yaml:3:1: not valid YAML: expected ',' or ']'"),
             "missing.yaml": ("case: x\nruns: []\n", "missing.yaml: 'sql' is missing"),
             "shape.yaml": ("case: x\nsql: s\nruns: 5\n",
                            "shape.yaml: 'runs': Input should be a valid list"),
             "text.yaml": ("just words\n", "text.yaml: a case is a mapping of its fields")}
    for name, (text, _) in files.items():
        (tmp_path / name).write_text(text)
    assert main(["test", *(str(tmp_path / name) for name in files)]) == 1
    out = capsys.readouterr().out
    for name, (_, reason) in files.items():
        assert f"FAIL {tmp_path / name}\n  {tmp_path}/{reason}" in out
    assert out.endswith("0 passed, 4 failed\n")
    assert "Traceback" not in out


def test_validate_says_when_a_pipeline_has_no_statements(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.sql").write_text("-- nothing yet\n")
    (tmp_path / "one.sql").write_text(
        "CREATE STREAM a (id INT) WITH (location='a', key='id');\n")
    assert main(["validate", str(tmp_path / "empty.sql"), str(tmp_path / "one.sql")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'empty.sql'}: ok, but pipeline 'empty' has no statements: nothing to run",
        f"{tmp_path / 'one.sql'}: ok, pipeline 'one' with 1 step"]


def test_a_case_expecting_rows_of_a_table_or_state_of_a_stream_is_told_so() -> None:
    """A case's own mistakes, in the case's order; no table is read for
    them, so no Spark is needed (``io`` holds the pipeline alone)."""
    from types import SimpleNamespace

    from splice.runtime.compile import compile_text

    from splice.testing.cases import OutputExpect, check_outputs

    pipeline = compile_text("""
CREATE TABLE l (k STRING, v STRING) WITH (location='l', key='k');
CREATE TABLE r (k STRING, v STRING) WITH (location='r', key='k');
CREATE STREAM s (id INT, k STRING) WITH (location='s', key='id');
CREATE TABLE joined AS SELECT l.v AS lv, r.v AS rv FROM l JOIN r ON l.k = r.k;
CREATE STREAM copied AS SELECT id, k FROM s;
""", file="case.sql", name="case")
    table, stream = "joined", "copied"
    assert pipeline.outputs[table].kind.value == "table"
    assert pipeline.outputs[stream].kind.value == "stream"
    expect = {stream: OutputExpect(state=[]), table: OutputExpect(rows=[])}
    problems = check_outputs(SimpleNamespace(pipeline=pipeline, spark=None), expect, "after run 1")
    assert problems == [f"output '{stream}' is a stream: expect its 'rows', not 'state'",
                        f"output '{table}' is a table: expect its 'state', not 'rows'"]


def test_a_failed_step_of_the_demo_is_one_paragraph_not_a_traceback(tmp_path: Path, capsys,
                                                                    monkeypatch) -> None:
    """A step of `splice demo` that fails (seen under Spark Connect on a
    loaded machine: a Python worker that did not connect back) ends in the
    step's one paragraph and exit 1. Spark's failure is stood in for here,
    the one branch no other test reaches cheaply: the demo's data writing
    and run are replaced by a StepFailed of the demo's first step."""
    from splice.runtime.compile import compile_path
    from splice.runtime.step_run import StepFailed

    from splice.cli import demo

    step = compile_path(ROOT / "pipelines" / "demo").steps[0]

    def fails(*_args, **_kwargs):
        raise StepFailed(step, "the Python worker did not connect back")

    monkeypatch.setattr(demo, "write_demo_data", lambda *a, **k: None)
    monkeypatch.setattr(demo, "run_and_report", fails)
    assert main(["demo", "--warehouse", str(tmp_path / "wh")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"splice: step '{step.id}' ({step.op}, from ")
    assert "the Python worker did not connect back" in err and "Traceback" not in err
