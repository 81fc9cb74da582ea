"""The asset factory, materialized for real: Dagster runs Spark, writes Delta."""

from __future__ import annotations

import threading
import time

import pytest
from dagster import AssetKey, materialize
from splice.engine.io import delta_version
from splice.orchestration.assets import build_assets
from splice.orchestration.definitions import ROOT, PipelineLoadError, build_definitions, compile_all
from splice.resources.spark import SparkResource

from tests.helpers.pipeline import LENSES_LEFT, append, make_io, output_rows


def test_definitions_show_one_asset_per_step_with_dependencies(warehouse) -> None:
    pipelines = compile_all(ROOT / "pipelines")
    defs = build_definitions(pipelines, warehouse, SparkResource())
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"demo/customers", "demo/orders", "demo/customersTable", "demo/ordersStream",
            "demo/orders_enriched", "demo/orders_matched"} <= keys
    deps = {k.to_user_string() for k in graph.get(AssetKey(["demo", "customersTable"])).parent_keys}
    assert deps == {"demo/customers"}
    join_parents = {k.to_user_string() for k in
                    graph.get(AssetKey(["demo", "orders_enriched"])).parent_keys}
    assert "demo/customersTable" in join_parents
    assert any(k.startswith("demo/ordersStream") for k in join_parents)
    assert defs.resolve_job_def("demo_job") is not None
    assert {s.name for s in defs.sensors} == {"demo_new_data", "demo_observe_sources",
                                              "demo_tables_changed"}


@pytest.mark.spark
def test_materializing_the_assets_writes_the_tables(spark, warehouse) -> None:
    io = make_io(spark, warehouse, LENSES_LEFT, name="lenses")
    append(io, "customers", [{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"},
                          {"id": 3, "customer_id": 3, "item": "Keyboard"}])
    result = materialize(build_assets(io.pipeline),
                         resources={"spark": SparkResource(), "warehouse": warehouse})
    assert result.success
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"),
                                                          (None, "Keyboard")]
    events = {e.asset_key.to_user_string(): e for e in result.get_asset_materialization_events()
              if e.asset_key}
    meta = events["lenses/result"].materialization.metadata
    assert meta["rows_written"].value == 2
    # the version the run left the output table at (its first write created it)
    result_step = io.pipeline.outputs["result"]
    assert meta["delta_version"].value == delta_version(spark, io.table_path(result_step)) == 0
    assert meta["duration_s"].value > 0
    columns = [c.name for c in meta["dagster/column_schema"].value.columns]
    assert columns == ["_key", "name", "item", "ROWTIME"]
    table_meta = events["lenses/customersTable"].materialization.metadata
    assert table_meta["rows_written"].value == 2


def test_definitions_refuse_two_folders_with_one_pipeline_name(tmp_path, warehouse) -> None:
    """``my-demo`` and ``my_demo`` both compile to pipeline 'my_demo'; Dagster
    would refuse the duplicate job names with a message naming neither folder."""
    for n, folder in enumerate(("my-demo", "my_demo")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "p.sql").write_text(
            f"CREATE STREAM s (id INT);\nINSERT INTO out{n} SELECT STREAM id FROM s;\n")
    with pytest.raises(PipelineLoadError) as refused:
        build_definitions(compile_all(tmp_path), warehouse, SparkResource())
    assert str(refused.value) == (f"{tmp_path}/my-demo and {tmp_path}/my_demo both compile to "
                                  "pipeline 'my_demo'; rename one of the two")


@pytest.mark.spark
def test_standard_metadata_and_a_schema_never_emptied(spark, warehouse) -> None:
    """Dagster's standard metadata keys; the column schema on the asset
    before any run, from the compiled plan, and kept on a run that read
    nothing new (which used to record an empty one)."""
    io = make_io(spark, warehouse, LENSES_LEFT, name="honest")
    assets = build_assets(io.pipeline)
    specs = {s.key.to_user_string(): s for a in assets for s in a.specs}
    schema = specs["honest/result"].metadata["dagster/column_schema"]
    expected = [("_key", "int"), ("name", "string"), ("item", "string"),
                ("ROWTIME", "timestamp")]
    assert [(c.name, c.type) for c in schema.columns] == expected
    assert specs["honest/result"].metadata["dagster/table_name"] == "result"

    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"},
                          {"id": 2, "customer_id": 3, "item": "Keyboard"}])
    resources = {"spark": SparkResource(), "warehouse": warehouse}
    result = materialize(assets, resources=resources)
    meta = _materialized(result)["honest/result"]
    assert meta["dagster/row_count"].value == 2
    assert meta["dagster/table_name"].value == "result"
    assert meta["dagster/uri"].value == io.table_path(io.pipeline.outputs["result"])
    assert [(c.name, c.type) for c in meta["dagster/column_schema"].value.columns] == expected
    assert meta["skipped_no_new_input"].value is False

    # A run that reads nothing new materializes nothing: each step's asset
    # gets an observation saying so; the compiled schema stays on the asset.
    result = materialize(assets, resources=resources)
    assert result.success and _materialized(result) == {}
    observed = {e.asset_key.to_user_string(): e.asset_observation_data.asset_observation.metadata
                for e in result.get_asset_observation_events()}
    assert set(observed) == set(specs)
    assert observed["honest/result"]["skipped_no_new_input"].value is True

    # New orders only: the steps they reach materialize, the join included
    # (its other input did not change); the customers' steps do not.
    append(io, "orders", [{"id": 3, "customer_id": 1, "item": "Mouse"}])
    result = materialize(assets, resources=resources)
    changed = _materialized(result)
    assert set(changed) == {"honest/orders", "honest/ordersStream",
                            "honest/ordersStream_by_customer_id", "honest/result"}
    assert changed["honest/result"]["rows_written"].value == 1
    assert changed["honest/result"]["dagster/row_count"].value == 3


def _materialized(result) -> dict[str, dict]:
    return {e.asset_key.to_user_string(): e.materialization.metadata
            for e in result.get_asset_materialization_events()}


@pytest.mark.spark
def test_two_overlapping_dagster_runs_end_well_and_write_once(spark, warehouse) -> None:
    """Two materializations of one pipeline's assets at once (a sensor's run
    and a manual launch): the second waits for the pipeline's lock, both
    succeed, and every row is written once."""
    io = make_io(spark, warehouse, LENSES_LEFT, name="overlap")
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": i, "customer_id": 1, "item": f"item {i}"} for i in range(50)])
    assets = build_assets(io.pipeline)
    results = []

    def launch() -> None:
        results.append(materialize(assets, resources={"spark": SparkResource(),
                                                      "warehouse": warehouse}))

    threads = [threading.Thread(target=launch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert [r.success for r in results] == [True, True]
    rows = output_rows(io, "result", "name", "item")
    assert len(rows) == 50 and len(set(rows)) == 50


@pytest.mark.spark
def test_the_tables_sensor_reports_writes_made_outside_dagster(spark, warehouse) -> None:
    """Tables written by runs outside Dagster (as splice serve writes them)
    become materializations of their assets: only the tables that changed."""
    from dagster import build_sensor_context
    from splice.orchestration.assets import asset_keys
    from splice.orchestration.table_sensor import tables_sensor
    from splice.runtime.runner import run_pipeline

    io = make_io(spark, warehouse, LENSES_LEFT, name="served")
    sensor = tables_sensor(io.pipeline, asset_keys(io.pipeline), warehouse)
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    run_pipeline(io.pipeline, io)
    first = sensor.evaluate_tick(build_sensor_context(cursor=None))
    assert first.asset_events == [] and first.cursor

    append(io, "orders", [{"id": 2, "customer_id": 1, "item": "Mouse"}])
    run_pipeline(io.pipeline, io)
    second = sensor.evaluate_tick(build_sensor_context(cursor=first.cursor))
    reported = {e.asset_key.to_user_string(): e.metadata["delta_version"].value
                for e in second.asset_events}
    assert set(reported) == {"served/ordersStream", "served/ordersStream_by_customer_id",
                             "served/result"}
    result = io.table_path(io.pipeline.outputs["result"])
    assert reported["served/result"] == delta_version(spark, result)
    third = sensor.evaluate_tick(build_sensor_context(cursor=second.cursor))
    assert third.asset_events == [] and third.skip_message == "no table changed"


@pytest.mark.spark
def test_each_step_is_materialized_as_it_ends(spark, warehouse, tmp_path, monkeypatch) -> None:
    """Live progress: while the last step is held after its output commit,
    the run's event log already holds the earlier steps' materializations
    and their log lines; the last one comes when it ends."""
    from dagster import DagsterEventType, DagsterInstance, EventRecordsFilter
    from splice.engine.faults import PAUSE_ENV, PAUSE_FILE_ENV

    io = make_io(spark, warehouse, LENSES_LEFT, name="live")
    last = io.pipeline.outputs["result"].id
    flag = tmp_path / "go"
    monkeypatch.setenv(PAUSE_ENV, f"output-committed@{last}")
    monkeypatch.setenv(PAUSE_FILE_ENV, str(flag))
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    results = []
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "dagster")) as instance:
        run = threading.Thread(target=lambda: results.append(materialize(
            build_assets(io.pipeline), instance=instance,
            resources={"spark": SparkResource(), "warehouse": warehouse})))
        run.start()
        try:
            deadline = time.monotonic() + 300
            while not (tmp_path / "go.reached").exists():
                assert run.is_alive() and time.monotonic() < deadline, "never paused"
                time.sleep(0.1)
            records = instance.get_event_records(
                EventRecordsFilter(event_type=DagsterEventType.ASSET_MATERIALIZATION))
            during = {r.event_log_entry.asset_materialization.asset_key.to_user_string()
                      for r in records}
            logs = [r.user_message for r in instance.all_logs(
                instance.get_runs()[0].run_id) if r.user_message]
        finally:
            flag.write_text("go")
            run.join(300)
    assert {"live/customers", "live/customersTable", "live/orders"} <= during
    assert "live/result" not in during
    assert any(m.startswith("customersTable: 1 rows written in ") for m in logs), logs
    # a Delta source writes no table: its line gives the rows its check read
    assert any(m.startswith("customers: 0 rows written in ") and m.endswith(", 1 rows read")
               for m in logs), logs
    assert results and results[0].success
    ended = {e.asset_key.to_user_string() for e in results[0].get_asset_materialization_events()}
    assert "live/result" in ended
    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]
