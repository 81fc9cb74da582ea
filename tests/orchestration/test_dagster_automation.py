"""Quiet automation (orchestration/sensors.py): sources are observed by
the sensors without a run per observation; a run starts only when a
source has new data. No Spark: a JSON folder's marker is its files."""

from __future__ import annotations

import os

from dagster import AssetKey, DagsterInstance, build_sensor_context
from splice.orchestration.factory import build_definitions
from splice.resources.spark import SparkResource

from tests.helpers.pipeline import make_io
from tests.orchestration.test_dagster_sources import JSON_ORDERS


def _write(folder: str, name: str, line: str) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "w") as fh:
        fh.write(line + "\n")


def test_the_default_path_runs_once_per_change_and_records_the_versions(warehouse) -> None:
    io = make_io(None, warehouse, JSON_ORDERS, name="quiet")
    defs = build_definitions([io.pipeline], warehouse, SparkResource())
    sensor = defs.resolve_sensor_def("quiet_new_data")
    orders = AssetKey(["quiet", "orders_data"])
    folder = warehouse.source_path("orders")
    _write(folder, "a.json", '{"id": 1, "customer_id": 1, "item": "Computer"}')

    first = sensor.evaluate_tick(build_sensor_context(cursor=None))
    assert len(first.run_requests) == 1
    observed = {e.asset_key: e.tags["dagster/data_version"] for e in first.asset_events}
    assert observed == {orders: "1:a.json", AssetKey(["quiet", "customers_data"]): "empty"}
    # Sixty ticks without new data: no run, no observation.
    cursor = first.cursor
    for _ in range(60):
        tick = sensor.evaluate_tick(build_sensor_context(cursor=cursor))
        assert (tick.run_requests, tick.asset_events) == ([], [])
        assert tick.skip_message == "no new source data"
    _write(folder, "b.json", '{"id": 2, "customer_id": 9, "item": "Pen"}')
    second = sensor.evaluate_tick(build_sensor_context(cursor=cursor))
    assert [r.tags["splice/sources"] for r in second.run_requests] == ["orders"]
    assert [(e.asset_key, e.tags["dagster/data_version"]) for e in second.asset_events] == [
        (orders, "2:b.json")]

    # What the daemon stores of the tick: the data version Dagster's
    # automation compares (the observable asset's own version, as a run's
    # observation would record it).
    instance = DagsterInstance.ephemeral()
    for event in second.asset_events:
        instance.report_runless_asset_event(event)
    assert instance.get_latest_data_version_record(orders).asset_observation.data_version \
        == "2:b.json"


def test_the_observation_sensor_launches_no_run(warehouse) -> None:
    """For declarative automation: the new version is recorded, no run is
    requested, and Dagster's automation launches none to observe."""
    io = make_io(None, warehouse, JSON_ORDERS, name="decl")
    defs = build_definitions([io.pipeline], warehouse, SparkResource())
    sensor = defs.resolve_sensor_def("decl_observe_sources")
    _write(warehouse.source_path("orders"), "a.json", '{"id": 1, "customer_id": 1, "item": "x"}')
    tick = sensor.evaluate_tick(build_sensor_context(cursor=None))
    assert tick.run_requests == []
    assert {e.asset_key.to_user_string() for e in tick.asset_events} == {
        "decl/orders_data", "decl/customers_data"}
    assert sensor.evaluate_tick(build_sensor_context(cursor=tick.cursor)).asset_events == []
    graph = defs.resolve_asset_graph()
    assert graph.get(AssetKey(["decl", "orders_data"])).automation_condition is None
