"""The Dagster factory: a translator shapes the assets, internal steps can be
hidden behind the outputs, and the example of docs/dagster.md is what the code does."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from dagster import AssetKey, AutomationCondition, Definitions, materialize
from splice.orchestration.bridge import SparkResource, compile_path, definition_hash
from splice.orchestration.definitions import ROOT
from splice.orchestration.factory import splice_assets, splice_definitions, splice_source_assets
from splice.orchestration.translator import SpliceTranslator
from splice.runtime.compile import compile_text
from splice.runtime.workspace import Workspace
from splice.sql.plan import Pipeline, Step

from tests.helpers.pipeline import LENSES_LEFT, append, output_rows

DEMO = ROOT / "pipelines" / "demo"


class ShopTranslator(SpliceTranslator):
    """Overrides every method."""

    def get_asset_key(self, step: Step, pipeline: Pipeline) -> AssetKey:
        return AssetKey(["shop", pipeline.name, step.id.lower()])

    def get_group_name(self, step: Step, pipeline: Pipeline) -> str:
        return "sources" if step.op == "source" else "transforms"

    def get_description(self, step: Step, pipeline: Pipeline) -> str:
        return f"{step.op} {step.id}"

    def get_metadata(self, step: Step, pipeline: Pipeline) -> dict[str, object]:
        return {"file": step.where.file}

    def get_tags(self, step: Step, pipeline: Pipeline) -> dict[str, str]:
        return {**super().get_tags(step, pipeline), "domain": "shop"}

    def get_owners(self, step: Step, pipeline: Pipeline) -> list[str]:
        return ["team:shop"]

    def get_code_version(self, step: Step, pipeline: Pipeline) -> str | None:
        return None if step.op == "source" else "v-" + super().get_code_version(
            step, pipeline)[:8]

    def get_automation_condition(self, step: Step,
                                 pipeline: Pipeline) -> AutomationCondition | None:
        return AutomationCondition.eager() if step.output else None


def _specs(defs: Definitions) -> dict[str, object]:
    return {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}


def _own_tags(tags: dict[str, str]) -> dict[str, str]:
    """The tags a translator gave (Dagster adds its kinds as dagster/kind/*)."""
    return {k: v for k, v in tags.items() if not k.startswith("dagster/")}


def test_a_custom_translator_shapes_what_dagster_reports(warehouse) -> None:
    defs = splice_definitions(DEMO, translator=ShopTranslator(), warehouse=warehouse)
    specs = _specs(defs)
    demo = compile_path(DEMO)
    assert set(specs) == {f"shop/demo/{s.id.lower()}" for s in demo.steps} | {
        "shop/demo/customers_data", "shop/demo/orders_data"}  # the sources' observed data
    enriched = specs["shop/demo/orders_enriched"]
    assert {d.asset_key.to_user_string() for d in enriched.deps} == {
        "shop/demo/ordersstream_by_customer_id", "shop/demo/customerstable"}
    assert {k: s.group_name for k, s in specs.items()} == {
        "shop/demo/customers": "sources", "shop/demo/orders": "sources",
        "shop/demo/customerstable": "transforms", "shop/demo/ordersstream": "transforms",
        "shop/demo/ordersstream_by_customer_id": "transforms",
        "shop/demo/orders_enriched": "transforms", "shop/demo/orders_matched": "transforms",
        # the sources' observed data, in their sources' group
        "shop/demo/customers_data": "sources", "shop/demo/orders_data": "sources"}
    assert _own_tags(enriched.tags) == {"splice/op": "join", "splice/kind": "stream",
                                        "domain": "shop"}
    assert enriched.owners == ["team:shop"]
    assert enriched.description == "join orders_enriched"
    # the translator's metadata, and the columns' lineage in the translator's keys
    lineage = enriched.metadata.pop("dagster/column_lineage")
    assert enriched.metadata == {"file": str(DEMO / "02_enrich.sql")}
    assert {(d.asset_key.to_user_string(), d.column_name)
            for d in lineage.deps_by_column["name"]} == {("shop/demo/customerstable", "name")}
    assert enriched.automation_condition == AutomationCondition.eager()
    assert specs["shop/demo/customerstable"].automation_condition is None
    assert {k: s.code_version for k, s in specs.items()} == {
        **{f"shop/demo/{s.id.lower()}": (None if s.op == "source"
                                         else "v-" + definition_hash(s)[:8])
           for s in demo.steps},
        "shop/demo/customers_data": None, "shop/demo/orders_data": None}


def test_the_default_translator_keeps_todays_assets(warehouse) -> None:
    specs = _specs(splice_definitions(DEMO, warehouse=warehouse))
    demo = compile_path(DEMO)
    table = specs["demo/customersTable"]
    assert (table.group_name, _own_tags(table.tags), table.owners) == (
        "demo", {"splice/op": "materialize", "splice/kind": "table"}, [])
    assert table.metadata["splice/step"] == "customersTable"
    assert table.description.startswith("step customersTable [materialize, table]")
    assert table.description.endswith(
        "```sql\nWITH customersTable AS (SELECT TABLE * FROM customers)\n```")
    assert {k: s.code_version for k, s in specs.items()} == {
        **{f"demo/{s.id}": definition_hash(s) for s in demo.steps},
        "demo/customers_data": None, "demo/orders_data": None}  # observed: no code


ENRICH = """
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING) WITH (location='orders', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM orders{where});
-- {comment}
INSERT INTO result
SELECT STREAM customersTable.name, ordersStream.item
FROM ordersStream LEFT JOIN customersTable ON customersTable.id = ordersStream.customer_id;
"""


def _versions(sql: str, hide: bool) -> dict[str, str | None]:
    pipeline = compile_text(sql, file="p.sql", name="p")
    return {s.key.to_user_string(): s.code_version
            for a in splice_assets(pipeline, hide_internal_steps=hide) for s in a.specs}


@pytest.mark.parametrize("hide", [False, True])
def test_code_versions_change_with_what_a_step_computes(hide: bool) -> None:
    before = _versions(ENRICH.format(where="", comment="one"), hide)
    assert _versions(ENRICH.format(where="", comment="two, moved"), hide) == before
    after = _versions(ENRICH.format(where=" WHERE item <> 'x'", comment="one"), hide)
    changed = sorted(k for k in before if before[k] != after[k])
    # hidden, ordersStream runs inside the output's asset: its version moves
    assert changed == (["p/result"] if hide else ["p/ordersStream"])


def test_hidden_steps_leave_sources_and_outputs(warehouse) -> None:
    defs = splice_definitions(DEMO, hide_internal_steps=True, warehouse=warehouse)
    specs = _specs(defs)
    assert set(specs) == {"demo/customers", "demo/orders", "demo/orders_enriched",
                          "demo/orders_matched", "demo/customers_data", "demo/orders_data"}
    for output in ("demo/orders_enriched", "demo/orders_matched"):
        assert {d.asset_key.to_user_string() for d in specs[output].deps} == {
            "demo/customers", "demo/orders"}
        assert specs[output].metadata["splice/runs_first"] == (
            "customersTable, ordersStream, ordersStream_by_customer_id")
    demo = compile_path(DEMO)
    steps = [demo.step(i) for i in ("customersTable", "ordersStream",
                                    "ordersStream_by_customer_id", "orders_enriched")]
    text = "\n".join(f"{s.id}={definition_hash(s)}" for s in steps)
    assert specs["demo/orders_enriched"].code_version == hashlib.sha256(
        text.encode()).hexdigest()
    assert specs["demo/customers"].code_version == definition_hash(demo.step("customers"))


class KeepWithSteps(SpliceTranslator):
    """Hides only what the planner made up, not the user's WITH steps."""

    def is_internal(self, step: Step, pipeline: Pipeline) -> bool:
        return step.op in ("repartition",)


def test_a_translator_chooses_the_internal_steps(warehouse) -> None:
    specs = _specs(splice_definitions(DEMO, translator=KeepWithSteps(),
                                      hide_internal_steps=True, warehouse=warehouse))
    assert "demo/ordersStream_by_customer_id" not in specs
    assert {d.asset_key.to_user_string() for d in specs["demo/orders_matched"].deps} == {
        "demo/ordersStream", "demo/customersTable"}
    assert specs["demo/orders_matched"].metadata["splice/runs_first"] == (
        "ordersStream_by_customer_id")


def _readme_example() -> str:
    """The python block under "Shaping the Dagster assets" in docs/dagster.md."""
    text = (ROOT / "docs" / "dagster.md").read_text()
    section = text[text.index("#### Shaping the Dagster assets"):]
    start = section.index("```python\n") + len("```python\n")
    return section[start:section.index("```", start)]


def test_the_readme_example_shapes_the_demo(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("SPLICE_WAREHOUSE", str(tmp_path / "warehouse"))
    namespace: dict[str, object] = {}
    exec(compile(_readme_example(), "docs/dagster.md", "exec"), namespace)
    specs = _specs(namespace["defs"])
    assert set(specs) == {"lake/demo/customers", "lake/demo/orders",
                          "lake/demo/orders_enriched", "lake/demo/orders_matched",
                          "lake/demo/customers_data", "lake/demo/orders_data"}
    assert {d.asset_key.to_user_string() for d in specs["lake/demo/orders_matched"].deps} \
        == {"lake/demo/customers", "lake/demo/orders"}
    assert {s.group_name for s in specs.values()} == {"streaming"}
    assert {s.tags["team"] for s in specs.values()} == {"orders"}
    # owners: every asset's, the sources' observed data too
    assert {tuple(s.owners) for s in specs.values()} == {("team:data",)}


class StreamingGroup(SpliceTranslator):
    def get_group_name(self, step: Step, pipeline: Pipeline) -> str:
        return "streaming"


@pytest.mark.spark
def test_hidden_steps_run_inside_the_output_asset(spark, warehouse, tmp_path: Path) -> None:
    folder = tmp_path / "lenses"
    folder.mkdir()
    (folder / "p.sql").write_text(LENSES_LEFT)
    io = Workspace(compile_path(folder), warehouse=warehouse, spark=spark).io
    append(io, "customers", [{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"},
                          {"id": 3, "customer_id": 3, "item": "Keyboard"}])
    # another group than the pipeline's: the job selects its assets by key
    defs = splice_definitions(folder, translator=StreamingGroup(), hide_internal_steps=True,
                              warehouse=warehouse, spark=SparkResource())

    result = defs.resolve_job_def("lenses_job").execute_in_process()
    assert result.success
    events = {e.asset_key.to_user_string(): e.materialization.metadata
              for e in result.get_asset_materialization_events()}
    assert set(events) == {"lenses/customers", "lenses/orders", "lenses/result"}
    assert events["lenses/result"]["rows_written"].value == 2
    assert events["lenses/result"]["splice/rows_written_first"].value == {
        "customersTable": 2, "ordersStream": 2, "ordersStream_by_customer_id": 2}
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"),
                                                          (None, "Keyboard")]

    # the output alone: it runs the steps between it and the sources first
    append(io, "customers", [{"id": 3, "name": "Ann"}])
    append(io, "orders", [{"id": 4, "customer_id": 3, "item": "Mouse"}])
    assets = splice_assets(io.pipeline, hide_internal_steps=True)
    again = materialize(assets, selection=[AssetKey(["lenses", "result"])],
                        resources={"spark": SparkResource(), "warehouse": warehouse})
    assert again.success
    [event] = again.get_asset_materialization_events()
    assert event.materialization.metadata["splice/rows_written_first"].value == {
        "customersTable": 1, "ordersStream": 1, "ordersStream_by_customer_id": 1}
    assert output_rows(io, "result", "name", "item") == [
        ("Ann", "Mouse"), ("John", "Computer"), (None, "Keyboard")]


def test_a_broken_pipeline_does_not_hide_the_others(tmp_path, warehouse) -> None:
    """The healthy pipeline loads whole; the broken one is one asset whose
    description lists every SQL error of its file, and whose
    materialization fails with them."""
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "p.sql").write_text(
        "CREATE STREAM s (id INT) WITH (location='s');\n"
        "INSERT INTO good_out SELECT STREAM id FROM s;\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "p.sql").write_text(
        "CREATE STREAM s (id INT) WITH (location='s2');\n"
        "INSERT INTO bad_out SELECT STREAM nope FROM s;\n"
        "INSERT INTO bad_two SELECT STREAM id FROM missing;\n")
    defs = splice_definitions(tmp_path, warehouse=warehouse, spark=SparkResource())
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"good/s", "good/good_out", "bad/sql_errors"} <= keys
    assert not any(k.startswith("bad/") and k != "bad/sql_errors" for k in keys)
    errors = defs.resolve_assets_def(AssetKey(["bad", "sql_errors"]))
    description = errors.specs_by_key[AssetKey(["bad", "sql_errors"])].description
    assert "pipeline 'bad'" in description and "2 error(s)" in description
    assert f"{tmp_path / 'bad' / 'p.sql'}:2:" in description and "nope" in description
    assert f"{tmp_path / 'bad' / 'p.sql'}:3:" in description and "missing" in description
    result = materialize([errors], raise_on_error=False)
    assert not result.success
    [failure] = result.get_step_failure_events()
    assert "nope" in failure.step_failure_data.user_failure_data.description


def test_each_asset_has_its_pipelines_pool_and_the_configured_retries(monkeypatch) -> None:
    monkeypatch.setenv("SPLICE_DAGSTER_RETRIES", "2")
    assets = splice_assets(compile_path(DEMO))
    assert {a.op.pool for a in assets} == {"splice_demo"}
    assert {(a.op.retry_policy.max_retries, a.op.retry_policy.delay) for a in assets} == {(2, 10)}
    monkeypatch.delenv("SPLICE_DAGSTER_RETRIES")
    assert {a.op.retry_policy for a in splice_assets(compile_path(DEMO))} == {None}


def test_steps_are_eager_by_default_sources_too_on_their_observed_data(monkeypatch) -> None:
    monkeypatch.delenv("SPLICE_AUTOMATION", raising=False)
    conditions = {s.key.path[-1]: s.automation_condition
                  for a in splice_assets(compile_path(DEMO)) for s in a.specs}
    # a source step reacts to new observations of its data (orchestration/source_data.py)
    assert conditions["customers"] == conditions["orders"] == AutomationCondition.eager()
    assert conditions["orders_enriched"] == AutomationCondition.eager()
    assert conditions["customersTable"] == AutomationCondition.eager()
    monkeypatch.setenv("SPLICE_AUTOMATION", "none")
    assert {s.automation_condition
            for a in splice_assets(compile_path(DEMO)) for s in a.specs} == {None}
    assert {a.specs_by_key[a.key].automation_condition
            for a in splice_source_assets(compile_path(DEMO))} == {None}


@pytest.mark.parametrize("hide", [False, True])
def test_an_output_on_a_topic_has_its_sink_asset_downstream(hide: bool) -> None:
    pipeline = compile_text(
        "CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');\n"
        "WITH named AS (SELECT STREAM id, item FROM orders);\n"
        "CREATE STREAM big WITH (kafka_topic='big') AS SELECT id, item FROM named;",
        file="p.sql", name="p")
    specs = {s.key.to_user_string(): s for a in splice_assets(
        pipeline, hide_internal_steps=hide) for s in a.specs}
    sink = specs["p/big_topic"]
    assert [d.asset_key.to_user_string() for d in sink.deps] == ["p/big"]
    assert [c.name for c in sink.metadata["dagster/column_schema"].columns] == [
        "_key", "value", "batch_id", "ROWTIME"]
    assert ("p/named" in specs) is not hide


class ShopErrors(SpliceTranslator):
    def get_sql_errors_key(self, pipeline_name: str) -> AssetKey:
        return AssetKey(["shop", pipeline_name, "sql_errors"])

    def get_sql_errors_group_name(self, pipeline_name: str) -> str:
        return "broken"

    def get_sql_errors_owners(self, pipeline_name: str) -> list[str]:
        return ["team:shop"]


def test_the_translator_shapes_a_broken_pipelines_asset(tmp_path, warehouse) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "p.sql").write_text("INSERT INTO o SELECT STREAM id FROM missing;\n")
    defs = splice_definitions(tmp_path, translator=ShopErrors(), warehouse=warehouse,
                              spark=SparkResource())
    [spec] = defs.resolve_all_asset_specs()
    assert (spec.key.to_user_string(), spec.group_name, spec.owners) == (
        "shop/bad/sql_errors", "broken", ["team:shop"])


def test_loading_the_definitions_warns_of_nothing(warehouse) -> None:
    """Dagster's beta warning for the sources' observation was printed once
    per source at every load of the code location."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        defs = splice_definitions(DEMO, warehouse=warehouse, spark=SparkResource())
        defs.resolve_asset_graph()
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
