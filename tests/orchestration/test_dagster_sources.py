"""Sources' data as observable assets: the pipeline's job observes each
source before running the steps, and the data version is the source's
marker, so it changes exactly when new data arrives."""

from __future__ import annotations

import json
import os

import pytest
from dagster import AssetKey, AutomationCondition, DagsterInstance
from splice.engine.source_state import source_marker
from splice.orchestration.factory import build_definitions
from splice.resources.spark import SparkResource

from tests.helpers.pipeline import LENSES_LEFT, append, make_io, output_rows


def _version(instance: DagsterInstance, key: AssetKey) -> str | None:
    record = instance.get_latest_data_version_record(key)
    return None if record is None else record.asset_observation.data_version


def test_each_source_has_an_observable_data_asset_upstream_of_its_step(warehouse) -> None:
    io = make_io(None, warehouse, LENSES_LEFT, name="obs")
    graph = build_definitions([io.pipeline], warehouse, SparkResource()).resolve_asset_graph()
    data = graph.get(AssetKey(["obs", "customers_data"]))
    assert data.is_observable and data.is_external and not data.is_materializable
    assert graph.get(AssetKey(["obs", "customers"])).parent_keys == {data.key}
    assert data.automation_condition is None  # observed by the sensors, not by a run a minute
    assert graph.get(AssetKey(["obs", "customers"])).automation_condition == \
        AutomationCondition.eager()


@pytest.mark.spark
def test_the_job_observes_each_sources_data_version(spark, warehouse) -> None:
    io = make_io(spark, warehouse, LENSES_LEFT, name="obs")
    defs = build_definitions([io.pipeline], warehouse, SparkResource())
    job = defs.resolve_job_def("obs_job")
    instance = DagsterInstance.ephemeral()
    customers, orders = (AssetKey(["obs", f"{s}_data"]) for s in ("customers", "orders"))
    sources = io.pipeline.sources

    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    assert job.execute_in_process(instance=instance).success
    first = {k: _version(instance, k) for k in (customers, orders)}
    assert first == {customers: source_marker(warehouse, sources["customers"]),
                     orders: source_marker(warehouse, sources["orders"])}
    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]

    append(io, "orders", [{"id": 2, "customer_id": 9, "item": "Pen"}])
    assert job.execute_in_process(instance=instance).success
    assert _version(instance, customers) == first[customers]  # no new customers
    assert _version(instance, orders) != first[orders]
    assert _version(instance, orders) == source_marker(warehouse, sources["orders"])
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"), (None, "Pen")]


JSON_ORDERS = """
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING)
  WITH (location='orders', format='json', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO result SELECT STREAM customersTable.name, orders.item
FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
"""


def test_observing_a_json_folder_versions_it_by_its_files_as_the_sensor_sees_them(
        warehouse) -> None:
    """Observation alone (no step selected: no Spark): the folder's data
    version is its file state, a Delta source not written yet is ``empty``,
    and the pipeline's sensor requests a run exactly when a version moved."""
    from dagster import build_sensor_context

    io = make_io(None, warehouse, JSON_ORDERS, name="obsj")
    defs = build_definitions([io.pipeline], warehouse, SparkResource())
    job, sensor = defs.resolve_job_def("obsj_job"), defs.resolve_sensor_def("obsj_new_data")
    customers, orders = (AssetKey(["obsj", f"{s}_data"]) for s in ("customers", "orders"))
    instance = DagsterInstance.ephemeral()
    folder = warehouse.source_path("orders")

    def observe() -> dict[AssetKey, str | None]:
        assert job.execute_in_process(instance=instance,
                                      asset_selection=[customers, orders]).success
        return {k: _version(instance, k) for k in (customers, orders)}

    os.makedirs(folder)
    with open(os.path.join(folder, "a.json"), "w") as fh:
        fh.write('{"id": 1, "customer_id": 1, "item": "Computer"}\n')
    assert observe() == {customers: "empty", orders: "1:a.json"}
    tick = sensor.evaluate_tick(build_sensor_context(cursor=None))
    assert len(tick.run_requests) == 1
    assert json.loads(tick.cursor) == {"customers": "", "orders": "1:a.json"}

    assert observe() == {customers: "empty", orders: "1:a.json"}  # nothing new: same version
    assert sensor.evaluate_tick(build_sensor_context(cursor=tick.cursor)).run_requests == []

    with open(os.path.join(folder, "b.json"), "w") as fh:
        fh.write('{"id": 2, "customer_id": 9, "item": "Pen"}\n')
    assert observe() == {customers: "empty", orders: "2:b.json"}
    assert source_marker(warehouse, io.pipeline.sources["orders"]) == "2:b.json"
    again = sensor.evaluate_tick(build_sensor_context(cursor=tick.cursor))
    assert [r.tags["splice/sources"] for r in again.run_requests] == ["orders"]
    # observation only: no step ran, nothing was materialized
    assert instance.get_latest_materialization_event(AssetKey(["obsj", "orders"])) is None


def test_a_topic_without_a_broker_fails_its_observation_and_the_sensor_says_why(
        warehouse, monkeypatch, tmp_path) -> None:
    """No broker set for a Kafka source: the observation fails and the
    sensor skips, both with the settings' one-line message, never a
    traceback nor a version that silently stops changing."""
    from dagster import build_sensor_context

    monkeypatch.delenv("SPLICE_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.chdir(tmp_path)  # no splice.yaml with a broker in it
    io = make_io(None, warehouse, "CREATE STREAM s (id INT) WITH (format='kafka', "
                 "topic='t1', key='id');\nINSERT INTO out SELECT STREAM id FROM s;\n", name="k")
    defs = build_definitions([io.pipeline], warehouse, SparkResource())
    why = ("source 's' reads Kafka topic 't1' but no broker is set: set "
           "SPLICE_KAFKA_BOOTSTRAP=host:port for the sensor")

    result = defs.resolve_job_def("k_job").execute_in_process(
        instance=DagsterInstance.ephemeral(), asset_selection=[AssetKey(["k", "s_data"])],
        raise_on_error=False)
    assert not result.success
    [failure] = result.get_step_failure_events()
    assert failure.step_failure_data.user_failure_data.description == why

    tick = defs.resolve_sensor_def("k_new_data").evaluate_tick(build_sensor_context())
    assert tick.run_requests == [] and tick.skip_message == f"source state unreadable: {why}"
