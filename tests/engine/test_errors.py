"""A failing step says why, as the user meets it: `splice run`, `splice
test`, a Dagster materialization, and run_pipeline's StepFailed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dagster import materialize
from splice.orchestration.assets import build_assets
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import StepFailed, run_pipeline

from splice.cli import main
from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

CAST = """CREATE STREAM events (id INT, s STRING) WITH (location='events', key='id');
WITH t AS (SELECT STREAM id, CAST(s AS INT) AS n FROM events);
INSERT INTO out SELECT STREAM id, n FROM t;
"""
CAST_CAUSE = ("[CAST_INVALID_INPUT] The value 'two' of the type \"STRING\" cannot be cast to "
              "\"INT\" because it is malformed.")

CUSTOMERS = """CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
"""


def _no_stack(text: str) -> None:
    assert "Traceback" not in text and "\tat " not in text and "Caused by" not in text


def _pipeline_file(tmp_path: Path, sql: str, name: str, monkeypatch) -> str:
    """The pipeline as a file in the current folder, as a user names it."""
    (tmp_path / f"{name}.sql").write_text(sql)
    monkeypatch.chdir(tmp_path)
    return f"{name}.sql"


def test_a_value_that_does_not_cast_names_the_cast_in_splice_run(spark, tmp_path, capsys,
                                                                 monkeypatch):
    wh = str(tmp_path / "wh")
    io = make_io(spark, WarehouseResource(root=wh), CAST, name="errors")
    append(io, "events", [{"id": 1, "s": "1"}, {"id": 2, "s": "two"}])

    file = _pipeline_file(tmp_path, CAST, "errors", monkeypatch)
    assert main(["run", file, "--warehouse", wh]) == 1
    err = capsys.readouterr().err
    said = err.split("\nsplice: ", 1)[1]
    assert said.startswith(f"step 't' (project, from errors.sql:2:1) failed: {CAST_CAUSE}")
    assert "(in: CAST(`s` AS INT))" in said
    assert "(while writing micro-batch 0)" in said
    assert "FOREACH_BATCH_USER_FUNCTION_ERROR" not in said
    _no_stack(err)  # PySpark's own JSON log of the error is silenced too

    # the same words from run_pipeline; the whole text is kept as the detail
    with pytest.raises(StepFailed) as failed:
        run_pipeline(io.pipeline, io)
    assert str(failed.value) == said.splitlines()[0]
    assert "Caused by: org.apache.spark.SparkNumberFormatException" in failed.value.detail


def test_a_source_column_whose_type_changed(spark, tmp_path, capsys, monkeypatch):
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    io = make_io(spark, wh, CUSTOMERS, name="types")
    append(io, "customers", [{"id": 1, "name": "a"}])
    run_pipeline(io.pipeline, io)
    path = io.table_path(io.pipeline.sources["customers"])
    (spark.createDataFrame([("x", "b")], "id string, name string").write.format("delta")
     .mode("overwrite").option("overwriteSchema", "true").save(path))

    with pytest.raises(StepFailed) as failed:
        run_pipeline(io.pipeline, io)
    assert str(failed.value) == (
        f"step 'customers' (source, from types.sql:1:1) failed: source 'customers' column "
        f"'id' is STRING in the Delta table at {path} (version 1) but declared INT at "
        f"types.sql:1:1; fix the declaration (then rebuild the steps that read it: "
        f"`splice run --rebuild all`), or restore the column's type in the table")

    # The declaration follows the table: that is edited SQL, refused before
    # any stream reads the changed column, with the command that rebuilds.
    fixed = CUSTOMERS.replace("id INT", "id STRING")
    file = _pipeline_file(tmp_path, fixed, "types", monkeypatch)
    assert main(["run", file, "--warehouse", wh.root]) == 1
    err = capsys.readouterr().err
    assert "the SQL of 2 step(s) changed since their checkpoint and table were built" in err
    assert "'customers' (source, types.sql:1:1): declared changed" in err
    assert "--rebuild customers customersTable" in err
    _no_stack(err)


def test_a_corrupted_delta_log(spark, tmp_path):
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    io = make_io(spark, wh, CUSTOMERS, name="corrupt")
    append(io, "customers", [{"id": 1, "name": "a"}])
    run_pipeline(io.pipeline, io)
    append(io, "customers", [{"id": 2, "name": "b"}])
    path = io.table_path(io.pipeline.sources["customers"])
    log = os.path.join(path, "_delta_log", "00000000000000000001.json")
    with open(log, "w") as fh:
        fh.write("not json {{{\n")

    with pytest.raises(StepFailed) as failed:
        run_pipeline(io.pipeline, io)
    said = str(failed.value)
    assert said.startswith(
        f"step 'customers' (source, from corrupt.sql:1:1) failed: source 'customers' (declared "
        f"at corrupt.sql:1:1) cannot be read from the Delta table at {path}: "
        f"[FAILED_READ_FILE.NO_HINT] Encountered error while reading file ")
    assert "_delta_log/00000000000000000001.json" in said
    assert said.endswith("; check the table, or the source's location")
    _no_stack(said)


def test_a_missing_log_file(spark, tmp_path):
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    io = make_io(spark, wh, CUSTOMERS, name="gap")
    for i in range(3):
        append(io, "customers", [{"id": i, "name": "a"}])
    path = io.table_path(io.pipeline.sources["customers"])
    os.remove(os.path.join(path, "_delta_log", "00000000000000000001.json"))

    with pytest.raises(StepFailed) as failed:
        run_pipeline(io.pipeline, io)
    assert str(failed.value).startswith(
        f"step 'customers' (source, from gap.sql:1:1) failed: source 'customers' (declared at "
        f"gap.sql:1:1) cannot be read from the Delta table at {path}: "
        f"[DELTA_VERSIONS_NOT_CONTIGUOUS] Versions (0, 2) are not contiguous.")


def test_a_missing_source_location(spark, tmp_path, capsys, monkeypatch):
    where = f"file:{tmp_path}/nowhere/customers"
    sql = CUSTOMERS.replace("location='customers'", f"location='{where}'")
    wh = str(tmp_path / "wh")

    file = _pipeline_file(tmp_path, sql, "missing", monkeypatch)
    assert main(["run", file, "--warehouse", wh]) == 1
    err = capsys.readouterr().err
    assert (f"splice: step 'customers' (source, from missing.sql:1:1) failed: source "
            f"'customers' (declared at missing.sql:1:1) cannot be read from the Delta table "
            f"at {where}: [PATH_NOT_FOUND] Path does not exist: {where}; check the table, or the "
            f"source's location\n") in err
    assert not os.path.exists(f"{tmp_path}/nowhere")  # no empty table made in its place
    _no_stack(err)


def test_a_dagster_materialization_failure_says_the_root_cause(spark, tmp_path):
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    io = make_io(spark, wh, CAST, name="dagcast")
    append(io, "events", [{"id": 2, "s": "two"}])
    result = materialize(build_assets(io.pipeline), raise_on_error=False,
                         resources={"spark": SparkResource(), "warehouse": wh})
    assert not result.success
    failures = [e for e in result.all_events if e.is_step_failure]
    assert len(failures) == 1
    description = failures[0].step_failure_data.user_failure_data.description
    assert description.startswith(
        f"step 't' (project, from dagcast.sql:2:1) failed: {CAST_CAUSE}")
    assert description.endswith("(while writing micro-batch 0)")
    # the JVM's own log of the failure, copied into the step's failure
    assert "CAST_INVALID_INPUT" in failures[0].step_failure_data.user_failure_data.metadata[
        "jvm_log"].value


def test_splice_test_prints_the_root_cause(spark, tmp_path, capsys):
    case = tmp_path / "cast.yaml"
    body = "\n".join("  " + line for line in CAST.strip().splitlines())
    case.write_text(
        "case: cast-fails\n"
        f"sql: |\n{body}\n"
        "runs:\n"
        "  - append:\n"
        "      events:\n"
        "        - {id: 2, s: two}\n")
    assert main(["test", str(case)]) == 1
    out = capsys.readouterr().out
    assert "FAIL cast-fails" in out
    assert f"  step 't' (project, from cast.yaml:2:1) failed: {CAST_CAUSE}" in out
    _no_stack(out)


def _dagster_failure(io, wh) -> str:
    result = materialize(build_assets(io.pipeline), raise_on_error=False,
                         resources={"spark": SparkResource(), "warehouse": wh})
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


def test_dagster_names_a_corrupted_log_and_a_missing_source(spark, tmp_path):
    """What a Dagster user sees for a corrupted source log and for a source
    path that does not exist: the step, its SQL position, the input, the
    cause; no stack trace."""
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    io = make_io(spark, wh, CUSTOMERS, name="dagcorrupt")
    append(io, "customers", [{"id": 1, "name": "a"}])
    append(io, "customers", [{"id": 2, "name": "b"}])
    path = io.table_path(io.pipeline.sources["customers"])
    with open(os.path.join(path, "_delta_log", "00000000000000000001.json"), "w") as fh:
        fh.write("not json {{{\n")
    said = _dagster_failure(io, wh)
    assert said.startswith(
        f"step 'customers' (source, from dagcorrupt.sql:1:1) failed: source 'customers' "
        f"(declared at dagcorrupt.sql:1:1) cannot be read from the Delta table at {path}: "
        f"[FAILED_READ_FILE.NO_HINT] Encountered error while reading file ")
    _no_stack(said)

    where = f"file:{tmp_path}/nowhere/customers"
    io = make_io(spark, wh, CUSTOMERS.replace("location='customers'", f"location='{where}'"),
                 name="dagmissing")
    said = _dagster_failure(io, wh)
    assert said == (
        f"step 'customers' (source, from dagmissing.sql:1:1) failed: source 'customers' "
        f"(declared at dagmissing.sql:1:1) cannot be read from the Delta table at {where}: "
        f"[PATH_NOT_FOUND] Path does not exist: {where}; check the table, or the source's "
        "location")
