"""Splice as a Dagster Component (orchestration/component.py): scaffolded,
loaded from YAML with its translator settings, materialized; and through
the real `dg` CLI, `dg check defs` and `dg list defs` on a project that
uses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey
from dagster.components.testing import create_defs_folder_sandbox
from splice.orchestration.component import SpliceComponent

from tests.conftest import child_env

DG = Path(sys.executable).parent / "dg"


def _yaml(path: Path, extra: str) -> None:
    (path / "defs.yaml").write_text((path / "defs.yaml").read_text() + extra)


def test_the_scaffold_writes_a_defs_yaml_and_an_example_pipeline() -> None:
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=SpliceComponent)
        assert (path / "defs.yaml").read_text() == (
            "type: splice.orchestration.component.SpliceComponent\n\n"
            "attributes:\n  pipelines: pipelines\n")
        assert "INSERT INTO orders_enriched" in (
            path / "pipelines" / "example" / "pipeline.sql").read_text()


def test_yaml_settings_shape_every_asset(tmp_path: Path) -> None:
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=SpliceComponent)
        _yaml(path, f"  warehouse: {tmp_path / 'wh'}\n  hide_internal_steps: true\n"
                    "  translation:\n    key_prefix: [lake]\n    group_name: streaming\n"
                    "    owners: ['team:data']\n    tags: {tier: gold}\n")
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert isinstance(component, SpliceComponent)
            specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
            jobs = {j.name for j in defs.jobs}
    assert set(specs) == {"lake/example/customers", "lake/example/orders",
                          "lake/example/orders_enriched", "lake/example/customers_data",
                          "lake/example/orders_data"}
    assert {(s.group_name, tuple(s.owners), s.tags.get("tier")) for s in specs.values()} == {
        ("streaming", ("team:data",), "gold")}
    assert {d.asset_key.to_user_string() for d in specs["lake/example/orders"].deps} == {
        "lake/example/orders_data"}
    assert "example_job" in jobs


def test_a_translator_named_in_yaml_is_used_and_a_bad_one_is_refused() -> None:
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=SpliceComponent)
        _yaml(path, "  translator: tests.orchestration.test_dagster_factory:StreamingGroup\n")
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            groups = {s.group_name for s in defs.resolve_all_asset_specs()}
    assert groups == {"streaming"}
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=SpliceComponent)
        _yaml(path, "  translator: tests.orchestration.test_dagster_factory:DEMO\n")
        with pytest.raises(Exception) as refused, \
                sandbox.load_component_and_build_defs(defs_path=path):
            pass
    causes, error = [], refused.value
    while error is not None:
        causes.append(str(error))
        error = error.__cause__ or error.__context__
    assert any("tests.orchestration.test_dagster_factory:DEMO' is not a subclass of "
               "SpliceTranslator" in c for c in causes), causes


@pytest.mark.spark
def test_the_components_assets_materialize(tmp_path: Path, spark) -> None:
    from splice.resources.spark import SparkResource
    from splice.resources.warehouse import WarehouseResource
    from splice.runtime.compile import compile_path
    from splice.runtime.workspace import Workspace

    from tests.helpers.pipeline import append, output_rows

    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=SpliceComponent)
        _yaml(path, f"  warehouse: {tmp_path / 'wh'}\n")
        io = Workspace(compile_path(path / "pipelines" / "example"),
                       warehouse=WarehouseResource(root=str(tmp_path / "wh")), spark=spark).io
        append(io, "customers", [{"id": 1, "name": "Ann"}])
        append(io, "orders", [{"id": 7, "customer_id": 1, "item": "lamp"},
                              {"id": 8, "customer_id": 2, "item": "pen"}])
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            result = defs.resolve_job_def("example_job").execute_in_process(
                resources={"spark": SparkResource()})
    assert result.success
    assert AssetKey(["example", "orders_enriched"]) in {
        e.asset_key for e in result.get_asset_materialization_events()}
    assert output_rows(io, "orders_enriched", "name", "item") == [("Ann", "lamp"), (None, "pen")]


PYPROJECT = """\
[project]
name = "shop"
version = "0.1.0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "shop"
"""
DEFINITIONS = """\
from pathlib import Path

from dagster.components import load_from_defs_folder

defs = load_from_defs_folder(path_within_project=Path(__file__).parent.parent.parent)
"""


@pytest.mark.skipif(not DG.exists(), reason="dagster-dg-cli is not installed")
def test_dg_scaffolds_checks_and_lists_a_project_using_it(tmp_path: Path) -> None:
    """The real `dg`, as a dagster-dbt user runs it on a project."""
    project = tmp_path / "shop"
    (project / "src" / "shop" / "defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "src" / "shop" / "__init__.py").write_text("")
    (project / "src" / "shop" / "defs" / "__init__.py").write_text("")
    (project / "src" / "shop" / "definitions.py").write_text(DEFINITIONS)
    env = child_env(SPLICE_WAREHOUSE=str(tmp_path / "wh"),
                    PYTHONPATH=os.pathsep.join([str(project / "src"),
                                                os.environ.get("PYTHONPATH", "")]))

    def dg(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([str(DG), *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    # The project names no registry module: `dg list components` shows the
    # component through splice's entry point (dagster_dg_cli.registry_modules).
    assert "splice.orchestration.component.SpliceComponent" in dg("list", "components").stdout
    dg("scaffold", "defs", "splice.orchestration.component.SpliceComponent", "streaming")
    assert (project / "src" / "shop" / "defs" / "streaming" / "defs.yaml").exists()
    checked = dg("check", "defs")
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    listed = json.loads(dg("list", "defs", "--json").stdout)
    keys = {a["asset_key"] for a in listed["assets"]}
    assert {"example/orders_enriched", "example/customers_data"} <= keys
    assert "example_job" in {j["name"] for j in listed["jobs"]}
