"""Asset checks from what Splice knows (orchestration/checks.py), as
Dagster reports them: passing and failing, with their counts."""

from __future__ import annotations

import pytest
from dagster import AssetCheckSeverity, materialize
from splice.orchestration.assets import build_assets
from splice.resources.spark import SparkResource

from tests.helpers.pipeline import append, make_io

SQL = """
CREATE STREAM orders (id INT, customer_id INT, item STRING)
  WITH (location='orders', format='json', key='id');
CREATE TABLE latest AS SELECT * FROM orders;
"""


def _checks(result) -> dict[str, tuple[bool, AssetCheckSeverity, dict]]:
    return {e.check_name: (e.passed, e.severity, {k: v.value for k, v in e.metadata.items()})
            for e in result.get_asset_check_evaluations()}


@pytest.mark.spark
def test_checks_pass_and_fail_with_their_counts(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="checked")
    assets = build_assets(io.pipeline)
    resources = {"spark": SparkResource(), "warehouse": warehouse}
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "a"},
                          {"id": 2, "customer_id": "two", "item": "b"}])
    first = _checks(materialize(assets, resources=resources))
    assert first["no_dead_letters"][:2] == (False, AssetCheckSeverity.WARN)
    assert first["no_dead_letters"][2] == {"dead_letters": 1}
    assert first["unique_keys"] == (True, AssetCheckSeverity.ERROR, {"duplicated_keys": 0})
    assert first["schema_matches_plan"][:2] == (True, AssetCheckSeverity.ERROR)

    # Behind Splice's back: a second row for key 1, with a column the plan lacks.
    latest = io.table_path(io.pipeline.outputs["latest"])
    row = spark.read.format("delta").load(latest).limit(1)
    (row.selectExpr("*", "'x' AS extra").write.format("delta").mode("append")
     .option("mergeSchema", "true").save(latest))
    append(io, "orders", [{"id": 3, "customer_id": 1, "item": "c"}])
    second = _checks(materialize(assets, resources=resources))
    assert second["no_dead_letters"] == (True, AssetCheckSeverity.WARN, {"dead_letters": 0})
    assert second["unique_keys"] == (False, AssetCheckSeverity.ERROR, {"duplicated_keys": 1})
    passed, severity, metadata = second["schema_matches_plan"]
    assert (passed, severity) == (False, AssetCheckSeverity.ERROR)
    assert metadata["differences"] == "- 5 columns planned, 6 in the table"
    assert "in the table" in metadata and metadata["in the table"][-1] == ["extra", "string"]


@pytest.mark.parametrize("join, expected", [
    ("FROM o JOIN p WITHIN 1 MINUTE ON o.id = p.id",
     {"schema_matches_plan", "no_late_records_dropped"}),
    ("FROM o LEFT JOIN pt ON o.id = pt.id", {"schema_matches_plan"}),
])
def test_which_steps_check_late_records(join: str, expected: set[str]) -> None:
    from dagster import AssetKey
    from splice.orchestration.checks import check_specs
    from splice.runtime.compile import compile_text

    pipeline = compile_text(
        "CREATE STREAM o (id INT, ts TIMESTAMP) WITH (location='o', timestamp='ts');\n"
        "CREATE STREAM p (id INT, ts TIMESTAMP) WITH (location='p', timestamp='ts');\n"
        "CREATE TABLE pt (id INT, v INT) WITH (location='pt', key='id');\n"
        f"INSERT INTO out SELECT STREAM o.id AS oid {join};\n", file="j.sql", name="j")
    step = pipeline.outputs["out"]
    assert {s.name for s in check_specs(step, AssetKey(["j", "out"]), pipeline)} == expected


@pytest.mark.spark
def test_a_check_selected_alone_judges_the_last_materialization(spark, warehouse) -> None:
    """Each check runs when selected without its asset (as the UI's Checks
    tab launches it): on the last materialization's counts and the table as
    it is; before any materialization it fails saying so. The steps do not
    run: no row is read."""
    from dagster import AssetCheckKey, AssetKey, AssetSelection, DagsterInstance

    io = make_io(spark, warehouse, SQL, name="alone")
    assets = build_assets(io.pipeline)
    resources = {"spark": SparkResource(), "warehouse": warehouse}
    latest, orders = AssetKey(["alone", "latest"]), AssetKey(["alone", "orders"])
    alone = AssetSelection.checks(AssetCheckKey(orders, "no_dead_letters"),
                                  AssetCheckKey(latest, "unique_keys"))
    instance = DagsterInstance.ephemeral()
    before = materialize(assets, resources=resources, instance=instance, selection=alone)
    assert before.success and before.get_asset_materialization_events() == []
    assert {n: (p, m) for n, (p, _, m) in _checks(before).items()} == {
        "no_dead_letters": (False, {"materialized": False}),
        "unique_keys": (False, {"materialized": False})}

    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "a"},
                          {"id": 2, "customer_id": "two", "item": "b"}])
    assert materialize(assets, resources=resources, instance=instance).success
    # A row for key 1 again behind Splice's back, and new orders no run reads.
    path = io.table_path(io.pipeline.outputs["latest"])
    spark.read.format("delta").load(path).limit(1).write.format("delta").mode("append").save(path)
    append(io, "orders", [{"id": 3, "customer_id": 1, "item": "c"}])
    checked = materialize(assets, resources=resources, instance=instance, selection=alone)
    assert checked.success and checked.get_asset_materialization_events() == []
    found = _checks(checked)
    assert set(found) == {"no_dead_letters", "unique_keys"}
    assert found["no_dead_letters"][:2] == (False, AssetCheckSeverity.WARN)
    assert found["no_dead_letters"][2]["dead_letters"] == 1
    assert found["unique_keys"][:2] == (False, AssetCheckSeverity.ERROR)
    assert found["unique_keys"][2]["duplicated_keys"] == 1
    assert "checked alone" in found["unique_keys"][2]["judged"]
    # Nothing ran: the third order is still unread.
    assert sorted(r[0] for r in spark.read.format("delta").load(path).select("id").collect()) \
        == [1, 1]


@pytest.mark.spark
def test_an_asset_without_its_checks_runs_none(spark, warehouse) -> None:
    """The asset selected with none of its checks (Dagster's own choice
    when a job leaves them out): no check result is sent."""
    from dagster import AssetKey, AssetSelection

    io = make_io(spark, warehouse, SQL, name="unchecked")
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "a"}])
    result = materialize(build_assets(io.pipeline),
                         resources={"spark": SparkResource(), "warehouse": warehouse},
                         selection=AssetSelection.assets(AssetKey(["unchecked", "orders"]),
                                                         AssetKey(["unchecked", "latest"]))
                         - AssetSelection.all_asset_checks())
    assert result.success and result.get_asset_check_evaluations() == []
    assert {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()} \
        == {"unchecked/orders", "unchecked/latest"}
