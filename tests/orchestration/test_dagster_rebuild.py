"""Rebuild from Dagster: the run config's ``rebuild`` does what
``splice run --rebuild`` does, with the same refusals, and says so in the
materializations (orchestration/run_config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, AssetSelection, materialize
from splice.orchestration.assets import build_assets
from splice.orchestration.run_config import SpliceRunConfig, steps_to_drop
from splice.resources.spark import SparkResource
from splice.runtime.compile import compile_text

from tests.helpers.pipeline import append, make_io, output_rows

OLD = """
CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');
CREATE TABLE latest AS SELECT * FROM orders;
"""
NEW = OLD.replace("SELECT * FROM orders", "SELECT * FROM orders WHERE id > 1")


def _config(*steps: str) -> dict:
    return {"ops": {"edited_steps": {"config": {"rebuild": list(steps)}}}}


@pytest.mark.spark
def test_an_edited_step_is_rebuilt_from_the_launchpads_config(spark, warehouse) -> None:
    io = make_io(spark, warehouse, OLD, name="edited")
    resources = {"spark": SparkResource(), "warehouse": warehouse}
    append(io, "orders", [{"id": 1, "item": "a"}, {"id": 2, "item": "b"}])
    assert materialize(build_assets(io.pipeline), resources=resources).success

    edited = make_io(spark, warehouse, NEW, name="edited")
    assets = build_assets(edited.pipeline)
    refused = materialize(assets, resources=resources, raise_on_error=False)
    assert not refused.success
    failure = refused.get_step_failure_events()[0].step_failure_data.error.message
    assert "splice run <pipeline> --rebuild latest   (or --rebuild all)" in failure
    assert failure.rstrip().endswith("ops:\n  edited_steps:\n    config:\n      rebuild: [latest]")
    assert output_rows(edited, "latest", "id", "item") == [(1, "a"), (2, "b")]  # untouched

    rebuilt = materialize(assets, resources=resources, run_config=_config("latest"))
    assert rebuilt.success
    assert output_rows(edited, "latest", "id", "item") == [(2, "b")]  # the new SQL, from the start
    metadata = {e.asset_key.to_user_string(): e.materialization.metadata
                for e in rebuilt.get_asset_materialization_events()}
    # orders read nothing new; latest_stream is the new SQL's own step
    assert set(metadata) == {"edited/latest_stream", "edited/latest"}
    assert metadata["edited/latest"]["splice/rebuilt"].value == \
        "rebuilt from its sources (latest dropped first)"
    assert "splice/rebuilt" not in metadata["edited/latest_stream"]
    # The next run is an ordinary one again.
    append(edited, "orders", [{"id": 3, "item": "c"}])
    again = materialize(assets, resources=resources)
    assert again.success and all("splice/rebuilt" not in e.materialization.metadata
                                 for e in again.get_asset_materialization_events())
    assert output_rows(edited, "latest", "id", "item") == [(2, "b"), (3, "c")]


@pytest.mark.spark
def test_a_rebuild_the_run_cannot_do_is_refused_before_anything_runs(spark, warehouse) -> None:
    io = make_io(spark, warehouse, OLD, name="edited")
    resources = {"spark": SparkResource(), "warehouse": warehouse}
    append(io, "orders", [{"id": 1, "item": "a"}])
    assets = build_assets(io.pipeline)
    unknown = materialize(assets, resources=resources, run_config=_config("nope"),
                          raise_on_error=False)
    message = unknown.get_step_failure_events()[0].step_failure_data.error.message
    assert "the run config's rebuild names no step of pipeline 'edited': nope" in message
    # orders alone selected: rebuilding it would drop latest, which this run leaves out
    partial = materialize(assets, resources=resources, run_config=_config("orders"),
                          selection=AssetSelection.assets(AssetKey(["edited", "orders"])),
                          raise_on_error=False)
    message = partial.get_step_failure_events()[0].step_failure_data.error.message
    assert message.startswith("dagster._core.definitions.events.Failure: rebuilding orders "
                              "drops latest, which this run does not "
                              "materialize: select their assets too"), message
    # Nothing was dropped, nothing ran: no table was made.
    assert not (Path(io.warehouse.root) / "latest").exists()


def test_steps_to_drop_follows_the_clis_rules() -> None:
    pipeline = compile_text(OLD, file="p.sql", name="p")
    everything = {s.id for s in pipeline.steps}
    assert steps_to_drop(pipeline, SpliceRunConfig(), everything) == []
    assert steps_to_drop(pipeline, SpliceRunConfig(rebuild=["ORDERS"]), everything) == \
        ["orders", "latest"]
    assert steps_to_drop(pipeline, SpliceRunConfig(rebuild=["all"]), everything) == \
        ["orders", "latest"]
